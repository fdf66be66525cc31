// The rows an export reads: a head's window, checked once, and its weights a block of rows at a time, from the
// kept map or through tiles, so that CSV, NPY and figures of a long head need O(block x n_k) memory.
#include <algorithm>
#include <string>

#include "attnscope/compute/tiles.h"
#include "attnscope/error.h"
#include "export/export_formats.h"

namespace attnscope {

namespace {

void checkWindowRange(const char* field, int lo, int hi, int n) {
  if (lo < 0 || hi > n || lo >= hi)
    throw InputError(field, "A:B with 0 <= A < B <= " + std::to_string(n) + " (positions from 0, B excluded)",
                     std::to_string(lo) + ":" + std::to_string(hi));
}

}  // namespace

ExportWindow exportWindow(const Scene& scene, const ExportRequest& request) {
  ExportWindow w{request.row0, request.row1 < 0 ? scene.nQ() : request.row1, request.col0,
                 request.col1 < 0 ? scene.nK() : request.col1};
  if (request.what != ExportWhat::Head && !w.whole(scene))
    throw InputError("rows", "a window only with one head (--what head:N)", "a window of every head");
  checkWindowRange("rows", w.row0, w.row1, scene.nQ());
  checkWindowRange("cols", w.col0, w.col1, scene.nK());
  return w;
}

void checkExportWindow(const Scene& scene, const ExportRequest& request) { exportWindow(scene, request); }

void forEachWeightRow(const Scene& scene, const Result& result, int head, const ExportWindow& window,
                      const std::function<void(int, const float*)>& fn) {
  const HeadResult& hr = result.heads.at(static_cast<std::size_t>(head));
  if (hr.hasMap()) {
    for (int i = window.row0; i < window.row1; ++i) fn(i, &hr.weights(i, window.col0));
    return;
  }
  const int block = std::clamp((4 << 20) / std::max(1, window.cols()), 1, 4096);
  for (int r0 = window.row0; r0 < window.row1; r0 += block) {
    const int r1 = std::min(window.row1, r0 + block);
    const Tile tile =
        weightTile(scene, result, {.head = head, .row0 = r0, .row1 = r1, .col0 = window.col0, .col1 = window.col1});
    for (int i = r0; i < r1; ++i) fn(i, &tile.values(i - r0, 0));
  }
}

}  // namespace attnscope
