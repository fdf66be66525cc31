#version 430 core
// A screen rectangle for one heatmap, drawn inside ImGui's draw list: four vertices from gl_VertexID
// (triangle strip), no vertex buffer. Passes the cell coordinates (columns, rows) of each corner.
uniform vec4 u_rect;     // x0, y0, x1, y1 in ImGui display coordinates (pixels, y down)
uniform vec2 u_display;  // ImGui display size (pixels)
uniform vec4 u_view;     // visible cell range: first column, first row, last column, last row (fractional)
out vec2 v_cell;         // (column, row) in cells, fractional

void main() {
  vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
  vec2 pos = mix(u_rect.xy, u_rect.zw, corner);
  v_cell = mix(u_view.xy, u_view.zw, corner);
  gl_Position = vec4(pos.x / u_display.x * 2.0 - 1.0, 1.0 - pos.y / u_display.y * 2.0, 0.0, 1.0);
}
