// KeyMask: the scene's mask rule evaluated per cell or per row, with no (n_q, n_k) matrix.
#include "attnscope/scene/key_mask.h"

#include <algorithm>

namespace attnscope {

KeyMask::KeyMask(const Scene& scene)
    : kind_(scene.mask),
      has_padding_(!scene.key_padding.empty()),
      padding_(&scene.key_padding),
      explicit_(&scene.explicit_mask),
      n_k_(scene.nK()),
      window_(scene.mask == MaskKind::Causal ? scene.sliding_window : 0) {
  if (has_padding_) {
    padded_before_.assign(static_cast<std::size_t>(n_k_) + 1, 0);
    for (int j = 0; j < n_k_; ++j)
      padded_before_[static_cast<std::size_t>(j) + 1] =
          padded_before_[static_cast<std::size_t>(j)] + (scene.key_padding[static_cast<std::size_t>(j)] ? 1 : 0);
  }
}

void KeyMask::fillRow(int query, int key0, int key1, std::uint8_t* out) const {
  const int n = key1 - key0;
  switch (kind_) {
    case MaskKind::None: std::fill_n(out, n, std::uint8_t{1}); break;
    case MaskKind::Causal: {
      const int lo = window_ > 0 ? query - window_ : -1;  // keys at or before lo are outside the window
      for (int j = 0; j < n; ++j) out[j] = key0 + j <= query && key0 + j > lo ? 1 : 0;
      break;
    }
    case MaskKind::Explicit: std::copy_n(&(*explicit_)(query, key0), n, out); break;
  }
  if (has_padding_)
    for (int j = 0; j < n; ++j)
      if ((*padding_)[static_cast<std::size_t>(key0 + j)]) out[j] = 0;
}

KeyMask::Block KeyMask::block(int query0, int query1, int key0, int key1) const {
  const int padded = has_padding_ ? padded_before_[static_cast<std::size_t>(key1)] -
                                        padded_before_[static_cast<std::size_t>(key0)]
                                  : 0;
  if (padded == key1 - key0) return Block::None;
  switch (kind_) {
    case MaskKind::None: return padded == 0 ? Block::All : Block::Some;
    case MaskKind::Causal:
      if (key0 > query1 - 1) return Block::None;  // every key after the last query
      if (window_ > 0 && key1 - 1 <= query0 - window_) return Block::None;  // every key before the first's window
      return padded == 0 && key1 - 1 <= query0 && (window_ <= 0 || key0 > query1 - 1 - window_) ? Block::All
                                                                                                : Block::Some;
    case MaskKind::Explicit: break;
  }
  return Block::Some;
}

int KeyMask::allowedCount(int query) const {
  const auto padded = [this](int end) { return has_padding_ ? padded_before_[static_cast<std::size_t>(end)] : 0; };
  switch (kind_) {
    case MaskKind::None: return n_k_ - padded(n_k_);
    case MaskKind::Causal: {
      const int end = std::clamp(query + 1, 0, n_k_);
      const int begin = window_ > 0 ? std::clamp(query - window_ + 1, 0, end) : 0;
      return end - begin - (padded(end) - padded(begin));
    }
    case MaskKind::Explicit: break;
  }
  int count = 0;
  for (int j = 0; j < n_k_; ++j) count += allowed(query, j) ? 1 : 0;
  return count;
}

}  // namespace attnscope
