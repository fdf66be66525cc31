// The forwards' attention: one head with its map kept (attendHead) or flash-style with only its row statistics
// (attendHeadStats), the maps' storage, and ForwardResult's one way to any map or tile, kept or recomputed.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <new>
#include <string>
#include <utility>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "attnscope/model/forward.h"
#include "compute/soft_cap.h"
#include "model/forward_shared.h"

namespace attnscope::model {

void attendHead(const HeadColumns& q, const HeadColumns& k, const HeadColumns& v, int window, bool causal,
                Eigen::Map<Matrix> weights, HeadOutput out, float softcap) {
  constexpr long kRows = 128;  // query rows a block: big enough for BLAS, small enough to skip most masked keys
  const long n = q.rows();
  for (long r0 = 0; r0 < n; r0 += kRows) {
    const long rows = std::min(kRows, n - r0), last = r0 + rows;
    const long k1 = causal ? last : n;  // causal: queries [r0, last) see keys below `last`; else every key
    const long k0 = window > 0 ? std::max(0L, r0 - window + 1) : 0;  // the block's first visible key
    auto scores = weights.block(r0, k0, rows, k1 - k0);              // (rows, k1 - k0)
    scores.noalias() = q.middleRows(r0, rows) * k.middleRows(k0, k1 - k0).transpose();
    softCapScores(scores, softcap);  // masked cells reset below
    for (long i = r0; i < last; ++i) {
      const long lo = window > 0 ? std::max(0L, i - window + 1) : 0, hi = causal ? i + 1 : n;  // keys [lo, hi)
      auto row = weights.row(i);
      auto seen = row.segment(lo, hi - lo).array();
      float m = seen[0];  // a plain loop: Eigen's maxCoeff trips GCC 12's AVX-512 header warning (bug 105593)
      for (long j = 1; j < hi - lo; ++j) m = seen[j] > m ? seen[j] : m;
      seen = (seen - m).exp();
      seen /= seen.sum();
      row.head(lo).setZero();
      row.tail(n - hi).setZero();
    }
    out.middleRows(r0, rows).noalias() = weights.block(r0, k0, rows, k1 - k0) * v.middleRows(k0, k1 - k0);
  }
}

void attendHeadStats(const HeadColumns& q, const HeadColumns& k, const HeadColumns& v, int window, bool causal,
                     HeadOutput out, HeadResult& stats, float softcap) {
  constexpr long kRows = 128, kKeys = 256;  // a (128, 256) score block: 128 KiB, in cache, big enough for BLAS
  const long n = q.rows();
  stats.row_max.resize(n);
  stats.row_sum.resize(n);
  Matrix s, acc;                 // (rows, keys) scores then exp(s - m); (rows, dh) the unnormalised output
  float m[kRows], l[kRows];      // the running row max and the sum of exp(s - m) so far
  for (long r0 = 0; r0 < n; r0 += kRows) {
    const long rows = std::min(kRows, n - r0), last = r0 + rows;
    const long key_end = causal ? last : n;  // causal: queries [r0, last) see keys below `last`; else every key
    const long first = window > 0 ? std::max(0L, r0 - window + 1) : 0;  // the first key any of them sees
    acc.setZero(rows, v.cols());
    std::fill_n(m, rows, -FLT_MAX / 2);  // not -inf: exp(-inf - -inf) is NaN, exp(-FLT_MAX/2 - s) is 0
    std::fill_n(l, rows, 0.0f);
    for (long k0 = first; k0 < key_end; k0 += kKeys) {  // key blocks wholly after every query are never computed
      const long k1 = std::min(key_end, k0 + kKeys), kn = k1 - k0;
      s.noalias() = q.middleRows(r0, rows) * k.middleRows(k0, kn).transpose();  // (rows, kn), Q already scaled
      softCapScores(s, softcap);
      for (long r = 0; r < rows; ++r) {
        const long i = r0 + r;
        const long lo = std::max(k0, window > 0 ? i - window + 1 : 0L);  // keys [lo, hi)
        const long hi = std::min(k1, causal ? i + 1 : n);
        auto row = s.row(r);
        if (lo >= hi) {  // nothing this row sees in the block
          row.setZero();
          continue;
        }
        auto seen = row.segment(lo - k0, hi - lo).array();
        float top = m[r];  // a plain loop: Eigen's maxCoeff trips GCC 12's AVX-512 header warning (bug 105593)
        for (long j = 0; j < hi - lo; ++j) top = seen[j] > top ? seen[j] : top;
        const float rescale = std::exp(m[r] - top);  // the earlier blocks' terms, to the new max
        seen = (seen - top).exp();
        row.head(lo - k0).setZero();
        row.tail(k1 - hi).setZero();
        l[r] = l[r] * rescale + seen.sum();
        m[r] = top;
        acc.row(r) *= rescale;
      }
      acc.noalias() += s * v.middleRows(k0, kn);  // (rows, dh)
    }
    for (long r = 0; r < rows; ++r) {  // every row sees at least its own key, so l > 0
      out.row(r0 + r) = acc.row(r) / l[r];
      stats.row_max[r0 + r] = m[r];
      stats.row_sum[r0 + r] = l[r];
    }
  }
}

MapBuffer::MapBuffer(std::size_t floats) : floats_(floats) {
  if (floats == 0) return;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  bytes_ = (floats * sizeof(float) + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  ::madvise(p, bytes_, MADV_HUGEPAGE);  // a hint: without THP the pages are ordinary ones
  data_ = static_cast<float*>(p);
}

MapBuffer::~MapBuffer() {
  if (data_) ::munmap(data_, bytes_);
}

MapBuffer::MapBuffer(MapBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      floats_(std::exchange(other.floats_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

MapBuffer& MapBuffer::operator=(MapBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    floats_ = std::exchange(other.floats_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void ForwardResult::resize(int tokens, int count, bool keep) {
  const std::size_t floats = keep ? static_cast<std::size_t>(count) * static_cast<std::size_t>(tokens) * tokens : 0;
  if (buffer.size() != floats) buffer = MapBuffer(floats);
  stats.clear();
  if (!keep) stats.resize(static_cast<std::size_t>(count / std::max(1, layout.n_head)));
  n = tokens;
  maps = count;
}

bool forwardKeepsMaps(int layers, int heads, int n, MapPolicy policy) {
  switch (policy) {
    case MapPolicy::Keep: return true;
    case MapPolicy::Drop: return false;
    case MapPolicy::Auto: break;
  }
  const std::size_t nn = static_cast<std::size_t>(n);
  return static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads) * nn * nn * sizeof(float) <=
         mapsLimitBytes();
}

Scene ForwardResult::tileScene(int layer, bool with_window) const {
  Scene s;
  s.query.resize(n, 0);  // only n_q = n_k = n: the tile engine reads Q and K from the layer's stats
  s.heads.resize(static_cast<std::size_t>(layout.n_head));
  s.scale = 1.0f;  // the stored Q carries the scale
  const int window = layout.windowOf(layer);
  if (window > 0 && layout.causal) {  // KeyMask's own rule: O(1) a cell
    s.mask = MaskKind::Causal;
    s.sliding_window = window;
  } else if (window > 0 && with_window) {  // a window without the causal rule: (n, n) bytes, for this request
    s.mask = MaskKind::Explicit;
    s.explicit_mask.resize(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) s.explicit_mask(i, j) = layout.keyAllowed(layer, i, j) ? 1 : 0;
  } else {
    s.mask = layout.causal ? MaskKind::Causal : MaskKind::None;
  }
  s.key_padding = layout.key_padding;
  return s;
}

Matrix ForwardResult::map(int index) const {
  if (keepsMaps()) return keptMap(index);
  return map(index / layout.n_head, index % layout.n_head);
}

Matrix ForwardResult::map(int layer, int head) const {
  if (keepsMaps()) return keptMap(layer * layout.n_head + head);
  const Scene scene = tileScene(layer);
  Matrix out;  // (n, n)
  weightRows(scene, *layerStats(layer, head), head, 0, n, out);
  return out;
}

float ForwardResult::weight(int layer, int head, int i, int j) const {
  if (keepsMaps()) return keptMap(layer * layout.n_head + head)(i, j);
  if (i < 0 || i >= n || j < 0 || j >= n)
    throw InputError("cell", "a query and a key in 0.." + std::to_string(n - 1),
                     std::to_string(i) + ", " + std::to_string(j));
  if (!layout.keyAllowed(layer, i, j)) return 0.0f;  // masked: after the query, or outside a sliding window
  // An allowed cell's weight needs only its row's m and l, which the window already set: the layer's scene
  // without the window serves, with no (n, n) mask built per hovered cell.
  const Scene scene = tileScene(layer, false);
  return weightTile(scene, *layerStats(layer, head),
                    {.head = head, .row0 = i, .row1 = i + 1, .col0 = j, .col1 = j + 1})
      .values(0, 0);
}

Tile ForwardResult::tile(int layer, const TileRequest& request) const {
  const Scene scene = tileScene(layer);
  if (!keepsMaps()) return weightTile(scene, *layerStats(layer, request.head), request);
  Result one;  // the one head's kept map as a result, so that kept and recomputed tiles are the same code
  one.heads.resize(static_cast<std::size_t>(layout.n_head));
  one.heads.at(static_cast<std::size_t>(request.head)).weights = keptMap(layer * layout.n_head + request.head);
  return weightTile(scene, one, request);
}

std::shared_ptr<const Result> ForwardResult::layerStats(int layer, int head) const {
  if (reader) return reader->layer(layer, head);
  return {std::shared_ptr<const Result>(), &stats.at(static_cast<std::size_t>(layer))};  // held here: no owner
}

struct LayerReader::Held {
  int layer;
  Result result;
  std::vector<std::once_flag> stats_once;     // per head
  std::vector<std::atomic<bool>> stats_ready;  // per head: its statistics are in (after stats_once ran)
  Held(int l, Result r)
      : layer(l), result(std::move(r)), stats_once(result.heads.size()), stats_ready(result.heads.size()) {
    for (std::size_t h = 0; h < result.heads.size(); ++h)  // read with the layer (a stored log-sum-exp)
      stats_ready[h] = result.heads[h].row_sum.size() == result.heads[h].q.rows();
  }
};

LayerReader::LayerReader(Read read, RowStatistics row_statistics, int resident)
    : read_(std::move(read)),
      row_statistics_(std::move(row_statistics)),
      resident_(static_cast<std::size_t>(std::max(1, resident))) {}

std::shared_ptr<const Result> ForwardResult::layerData(int layer, int head, bool& known) const {
  if (!reader) {
    known = true;
    return layerStats(layer, head);
  }
  std::shared_ptr<const Result> r = reader->layer(layer, head, false);
  known = reader->ready(layer, head);
  return r;
}

void LayerReader::setStatistics(int layer, int head, RowVector row_max, RowVector row_sum) const {
  std::shared_ptr<Held> held;
  {
    const std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;  // a layer is being read: the statistics are worked out on the CPU when asked
    for (const std::shared_ptr<Held>& h : held_)
      if (h->layer == layer) held = h;
  }
  if (!held || head < 0 || head >= static_cast<int>(held->result.heads.size())) return;
  HeadResult& hr = held->result.heads[static_cast<std::size_t>(head)];
  if (row_max.size() != hr.q.rows() || row_sum.size() != hr.q.rows()) return;
  std::call_once(held->stats_once[static_cast<std::size_t>(head)], [&] {
    if (hr.row_sum.size() != hr.q.rows()) hr.row_max = std::move(row_max), hr.row_sum = std::move(row_sum);
    held->stats_ready[static_cast<std::size_t>(head)] = true;
  });
}

std::shared_ptr<const Result> LayerReader::layer(int layer, int head, bool statistics) const {
  std::shared_ptr<Held> held;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(held_.begin(), held_.end(), [layer](const auto& h) { return h->layer == layer; });
    if (it != held_.end()) {
      held = *it;
      held_.erase(it);
    } else {
      held = std::make_shared<Held>(layer, read_(layer));  // under the lock: a layer is read once, one at a time
    }
    held_.push_front(held);
    while (held_.size() > resident_) held_.pop_back();
  }
  if (!statistics) return {held, &held->result};
  // Each head's statistics once, outside the list's lock (a head's pass may take seconds): a second asker of the
  // same head waits for the first's; other heads go on.
  const int heads = static_cast<int>(held->result.heads.size());
  const int h0 = head < 0 ? 0 : head, h1 = head < 0 ? heads : std::min(head + 1, heads);
  for (int h = h0; h < h1; ++h) {
    HeadResult& hr = held->result.heads[static_cast<std::size_t>(h)];
    std::call_once(held->stats_once[static_cast<std::size_t>(h)], [&] {
      if (hr.row_sum.size() != hr.q.rows()) row_statistics_(layer, hr);
      held->stats_ready[static_cast<std::size_t>(h)] = true;
    });
  }
  return {held, &held->result};
}

bool LayerReader::ready(int layer, int head) const {
  const std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // a layer is being read
  for (const std::shared_ptr<Held>& held : held_)
    if (held->layer == layer)
      return head >= 0 && head < static_cast<int>(held->stats_ready.size()) &&
             held->stats_ready[static_cast<std::size_t>(head)].load();
  return false;
}

}  // namespace attnscope::model
