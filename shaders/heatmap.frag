#version 430 core
// One heatmap pixel: the weight of the cell under it (R32F texture, n_k wide, n_q tall) mapped through the
// 256-entry colour map texture; masked cells (mask texture 0) get the masked colour. When a pixel covers
// several cells (thousands of tokens), it shows the largest weight among up to 4 x 4 of them, so that a
// sharp peak is not lost between pixels.
uniform sampler2D u_weights;   // (n_q rows, n_k columns), GL_R32F
uniform sampler2D u_mask;      // (n_q, n_k), GL_R8, 1 = may attend
uniform sampler2D u_colormap;  // 256 x 1, RGBA8
uniform vec2 u_range;          // weight shown at the map's first and last entry (colour scale)
uniform vec3 u_masked_color;   // kMaskedColor, 0..1
// The contrast (MapContrast, attnscope/export/contrast.h): u_row_norm 1 divides each weight by the largest allowed
// weight of its row, read over the texel columns [u_row_span.x, u_row_span.y) (one map's columns of an atlas);
// u_log 1 shows t = weight / top on a log scale over 3 decades (1e-3 .. 1) instead of linearly.
uniform int u_row_norm;
uniform int u_log;
uniform ivec2 u_row_span;
in vec2 v_cell;
out vec4 o_color;

void main() {
  ivec2 size = textureSize(u_weights, 0);
  vec2 footprint = max(fwidth(v_cell), vec2(1e-6));  // cells per pixel
  // The pixel covers v_cell +- footprint / 2; start at its first cell.
  ivec2 first = ivec2(floor(v_cell - 0.5 * max(footprint - 1.0, vec2(0.0))));
  ivec2 count = clamp(ivec2(ceil(footprint)), ivec2(1), ivec2(4));
  float best = -1.0;
  bool any_allowed = false;
  for (int dy = 0; dy < count.y; ++dy) {
    float row_top = 1.0;
    if (u_row_norm == 1) {
      int y = clamp(first.y + dy, 0, size.y - 1);
      row_top = 0.0;
      for (int x = max(u_row_span.x, 0); x < min(u_row_span.y, size.x); ++x)
        if (texelFetch(u_mask, ivec2(x, y), 0).r >= 0.5) row_top = max(row_top, texelFetch(u_weights, ivec2(x, y), 0).r);
      row_top = max(row_top, 1e-30);
    }
    for (int dx = 0; dx < count.x; ++dx) {
      ivec2 at = clamp(first + ivec2(dx, dy), ivec2(0), size - 1);
      if (texelFetch(u_mask, at, 0).r < 0.5) continue;
      any_allowed = true;
      best = max(best, texelFetch(u_weights, at, 0).r / row_top);
    }
  }
  if (!any_allowed) {
    o_color = vec4(u_masked_color, 1.0);
    return;
  }
  // Same rule as colorMapIndex() (and so colorAt()): t clamped to [0, 1], index = min(255, floor(t * 256)).
  float t = clamp((best - u_range.x) / max(u_range.y - u_range.x, 1e-12), 0.0, 1.0);
  if (u_log == 1) t = t > 0.0 ? clamp(1.0 + log(t) / (3.0 * log(10.0)), 0.0, 1.0) : 0.0;
  int index = min(255, int(floor(t * 256.0)));
  o_color = vec4(texelFetch(u_colormap, ivec2(index, 0), 0).rgb, 1.0);
}
