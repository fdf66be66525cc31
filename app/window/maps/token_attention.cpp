// One token's attention in one layer: a row or column tile per head, through the forward (maps/token_attention.h).
#include "window/maps/token_attention.h"

#include "attnscope/compute/tiles.h"

namespace attnscope::app {

TokenViewValues tokenViewValues(const model::ForwardResult& f, int layer, const TokenViewState& state,
                                const MapWeighting& weighting) {
  const int n = f.n, heads = f.layout.n_head, token = state.token;
  const bool to_it = state.to_it == 1;
  const Matrix key_scales = weighting.on ? valueNormScales(weighting.checkpoint.get(), f, layer) : Matrix();  // (heads, n)
  TokenViewValues out;
  out.w.assign(static_cast<std::size_t>(n), 0.0);
  out.masked.assign(static_cast<std::size_t>(n), 1);
  const int first = state.head < 0 ? 0 : state.head, last = state.head < 0 ? heads : state.head + 1;
  for (int h = first; h < last; ++h) {
    TileRequest r;
    r.head = h;
    if (to_it) {
      r.col0 = token, r.col1 = token + 1;
    } else {
      r.row0 = token, r.row1 = token + 1;
    }
    const Tile tile = f.tile(layer, r);
    for (int k = 0; k < n; ++k) {
      const int i = to_it ? k : 0, j = to_it ? 0 : k;
      const double scale = weighting.on ? key_scales(h, to_it ? token : k) : 1.0;
      out.w[static_cast<std::size_t>(k)] += tile.values(i, j) * scale;
      if (tile.masked.size() == 0 || !tile.masked(i, j)) out.masked[static_cast<std::size_t>(k)] = 0;
    }
  }
  for (double& v : out.w) v /= static_cast<double>(last - first);
  return out;
}

}  // namespace attnscope::app
