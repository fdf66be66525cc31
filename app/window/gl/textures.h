// The window's textures, made and filled here so that no other file of the app calls GL (app/README.md): a
// map's weights (R32F) and mask (R8) sampled nearest, and the RGBA8 targets the heatmap program draws into for
// ImGui to show. Texture names are GL's (GLuint) as `unsigned`, so a caller needs no GL header.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <cstdint>

namespace attnscope::app::gl {

// A 2D texture sampled nearest, clamped, without storage yet: one texel is one cell (or pooled block), and the
// colour map is looked up by index (texelFetch).
unsigned makeNearestTexture();
void deleteTextures(const unsigned* textures, std::size_t count);  // names 0 are skipped

// Fresh storage of `rows` texel rows `cols` wide, filled from `values` (row-major: row i is texel row i, which GL
// draws at the bottom), or undefined when `values` is null. A map's weights: R32F, one float a cell.
void setWeightTexels(unsigned texture, int cols, int rows, const float* values);
// Its mask: R8, one byte a cell, 255 where the cell may attend and 0 where masked (the heatmap shader's u_mask).
void setMaskTexels(unsigned texture, int cols, int rows, const std::uint8_t* allowed);
// Texel rows [row0, row0 + rows) of storage already set, the full `cols` wide; the other rows keep their texels.
void updateWeightRows(unsigned texture, int row0, int cols, int rows, const float* values);
void updateMaskRows(unsigned texture, int row0, int cols, int rows, const std::uint8_t* allowed);

// An RGBA8 texture drawn into through its own framebuffer (HeatmapProgram::draw), shown by ImGui.
struct RenderTarget {
  unsigned texture = 0, framebuffer = 0;
  int width = 0, height = 0;
};
// Makes `target` on first use, then gives it fresh storage of width x height texels (undefined until drawn).
void allocateRenderTarget(RenderTarget& target, int width, int height);
// Every texel of `target` set to (r, g, b, a); the caller's framebuffer and clear colour are kept.
void clearRenderTarget(const RenderTarget& target, float r, float g, float b, float a);
void deleteRenderTarget(RenderTarget& target);

// How ImGui's OpenGL 3 backend names a texture in a draw list (ImDrawList::AddImage's user_texture_id).
inline ImTextureID imguiTexture(unsigned texture) {
  return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture));
}

}  // namespace attnscope::app::gl
