// The model's maps through the heatmap shader: a pooled atlas for the grid, one full map for the close view.
#include "window/model/model_grid_renderer.h"

#include <epoxy/gl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attnscope/export/colormap.h"
#include "attnscope/gl_program.h"
#include "heatmap_shaders.h"
#include "window/heatmap_draw.h"

namespace attnscope::app {

namespace {

ImTextureID imguiTexture(unsigned texture) { return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture)); }

}  // namespace

ModelGridRenderer::ModelGridRenderer() {
  program_ = gpu::buildProgram({{GL_VERTEX_SHADER, "heatmap.vert", kHeatmap_vert},
                                 {GL_FRAGMENT_SHADER, "heatmap.frag", kHeatmap_frag}},
                                "embedded");
  glGenVertexArrays(1, &vao_);  // empty: the quad comes from gl_VertexID
  std::vector<unsigned char> rgba;
  for (const Rgb8& c : colorMapTable(ColorMap::Viridis)) rgba.insert(rgba.end(), {c.r, c.g, c.b, 255});
  colormap_ = makeNearestTexture();
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kColorMapSize, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  grid_weights_ = makeNearestTexture();
  grid_mask_ = makeNearestTexture();
  map_weights_ = makeNearestTexture();
  map_mask_ = makeNearestTexture();
  glBindTexture(GL_TEXTURE_2D, 0);
}

ModelGridRenderer::~ModelGridRenderer() {
  for (Target* t : {&grid_, &map_}) {
    glDeleteFramebuffers(1, &t->framebuffer);
    glDeleteTextures(1, &t->texture);
  }
  const GLuint textures[] = {colormap_, grid_weights_, grid_mask_, map_weights_, map_mask_};
  glDeleteTextures(5, textures);
  glDeleteVertexArrays(1, &vao_);
  glDeleteProgram(program_);
}

void ModelGridRenderer::resize(Target& target, int width, int height) {
  if (!target.texture) {
    target.texture = makeNearestTexture();
    glGenFramebuffers(1, &target.framebuffer);
  }
  if (target.width == width && target.height == height) return;
  target.width = width, target.height = height;
  glBindTexture(GL_TEXTURE_2D, target.texture);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glBindTexture(GL_TEXTURE_2D, 0);
}

void ModelGridRenderer::syncGrid(const std::shared_ptr<const model::ForwardResult>& forward, int layers, int heads,
                                 unsigned revision, int tile_w, int tile_h, const MapContrast& contrast,
                                 const std::shared_ptr<const model::Model>& weighting) {
  tile_w = std::max(1, tile_w), tile_h = std::max(1, tile_h);
  if (revision != grid_revision_ || tile_w != tile_w_ || tile_h != tile_h_ || layers != layers_ || heads != heads_ ||
      weighting.get() != grid_weighting_) {
    grid_revision_ = revision, tile_w_ = tile_w, tile_h_ = tile_h, layers_ = layers, heads_ = heads;
    grid_weighting_ = weighting.get();
    tile_max_.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads), 0.0f);
    auto job = std::make_shared<GridTilesJob>();
    job->forward = forward;
    job->weighting = weighting;
    job->layers = layers, job->heads = heads;
    job->blocks = std::min(forward->n, std::max(tile_w, tile_h));  // never more texels than pixels on a side
    grid_worker_.start(job);
    grid_job_ = job;
    grid_shown_layers_ = 0;
    const GLsizei width = heads * job->blocks, height = layers * job->blocks;
    for (unsigned texture : {grid_weights_, grid_mask_}) {  // filled layer by layer in showLandedLayers
      glBindTexture(GL_TEXTURE_2D, texture);
      glTexImage2D(GL_TEXTURE_2D, 0, texture == grid_weights_ ? GL_R32F : GL_R8, width, height, 0, GL_RED,
                   texture == grid_weights_ ? GL_FLOAT : GL_UNSIGNED_BYTE, nullptr);
    }
    glBindTexture(GL_TEXTURE_2D, 0);
    const bool same_size = grid_.texture && grid_.width == heads * tile_w && grid_.height == layers * tile_h;
    resize(grid_, heads * tile_w, layers * tile_h);
    if (!same_size) {  // fresh texels are undefined: a neutral grey until each layer lands
      GLint previous_framebuffer = 0;
      GLfloat previous_clear[4] = {};
      glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &previous_framebuffer);
      glGetFloatv(GL_COLOR_CLEAR_VALUE, previous_clear);
      glBindFramebuffer(GL_FRAMEBUFFER, grid_.framebuffer);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, grid_.texture, 0);
      glDisable(GL_SCISSOR_TEST);
      glClearColor(0.25f, 0.25f, 0.28f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      glClearColor(previous_clear[0], previous_clear[1], previous_clear[2], previous_clear[3]);
      glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous_framebuffer));
    }
  }
  const bool contrast_changed = contrast != contrast_;
  contrast_ = contrast;
  showLandedLayers();
  // A new contrast, or (Shared) a new largest weight among the landed layers: every landed tile again.
  if (contrast_changed || gridTop() != grid_top_) {
    grid_top_ = gridTop();
    for (int l = 0; l < grid_shown_layers_; ++l)
      for (int h = 0; h < heads_; ++h) renderGridTile(l, h);
  }
}

float ModelGridRenderer::gridTop() const {
  if (contrast_.scale == ColorScale::Shared) {
    float top = 0;
    for (int k = 0; k < grid_shown_layers_ * heads_; ++k) top = std::max(top, tile_max_[static_cast<std::size_t>(k)]);
    return top > 0 ? top : 1.0f;
  }
  return contrast_.scale == ColorScale::PerHead ? 0.0f : 1.0f;
}

float ModelGridRenderer::mapTop() const {
  const bool own = map_contrast_.scale == ColorScale::Shared || map_contrast_.scale == ColorScale::PerHead;
  return own && map_max_ > 0 ? map_max_ : 1.0f;
}

void ModelGridRenderer::renderGridTile(int l, int h) {
  const int b = grid_blocks_;
  const float fb = static_cast<float>(b);
  float top = gridTop();
  if (contrast_.scale == ColorScale::PerHead) {
    const float own = tile_max_[static_cast<std::size_t>(l * heads_ + h)];
    top = own > 0 ? own : 1.0f;
  }
  // GL rows run upwards: layer 1 goes at the top of the target.
  render(grid_, grid_weights_, grid_mask_, h * tile_w_, (layers_ - 1 - l) * tile_h_, tile_w_, tile_h_,
         CellView{static_cast<float>(h) * fb, static_cast<float>(l) * fb, static_cast<float>(h + 1) * fb,
                  static_cast<float>(l + 1) * fb},
         top, h * b, (h + 1) * b);
}

void ModelGridRenderer::showLandedLayers() {
  const int done = grid_job_ ? grid_job_->layers_done.load(std::memory_order_acquire) : 0;
  if (done <= grid_shown_layers_) return;
  const GridTilesJob& job = *grid_job_;
  const int blocks = job.blocks, first = grid_shown_layers_;
  const std::size_t width = static_cast<std::size_t>(heads_ * blocks);
  const std::size_t row0 = static_cast<std::size_t>(first * blocks);
  const GLsizei rows = (done - first) * blocks;
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glBindTexture(GL_TEXTURE_2D, grid_weights_);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, static_cast<GLint>(row0), static_cast<GLsizei>(width), rows, GL_RED,
                  GL_FLOAT, job.values.data() + row0 * width);
  glBindTexture(GL_TEXTURE_2D, grid_mask_);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, static_cast<GLint>(row0), static_cast<GLsizei>(width), rows, GL_RED,
                  GL_UNSIGNED_BYTE, job.allowed.data() + row0 * width);
  glBindTexture(GL_TEXTURE_2D, 0);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  grid_blocks_ = blocks;
  for (int l = first; l < done; ++l)
    for (int h = 0; h < heads_; ++h) {
      float top = 0;  // the tile's largest allowed block (max-pooled: its map's largest allowed weight)
      for (int p = 0; p < blocks; ++p)
        for (int q = 0; q < blocks; ++q) {
          const std::size_t at =
              static_cast<std::size_t>(l * blocks + p) * width + static_cast<std::size_t>(h * blocks + q);
          if (job.allowed[at]) top = std::max(top, job.values[at]);
        }
      tile_max_[static_cast<std::size_t>(l * heads_ + h)] = top;
    }
  grid_shown_layers_ = done;
  grid_top_ = gridTop();
  for (int l = first; l < done; ++l)
    for (int h = 0; h < heads_; ++h) renderGridTile(l, h);
  // All on show: the worker is done with the job, so its atlas and its hold on the forward (which a newer
  // forward may have replaced in the session) can go.
  if (done == layers_) grid_job_.reset();
}

void ModelGridRenderer::drawTile(ImDrawList* list, int layer, int head, ImVec2 p0) const {
  const float w = static_cast<float>(grid_.width), h = static_cast<float>(grid_.height);
  const float tw = static_cast<float>(tile_w_), th = static_cast<float>(tile_h_);
  const float u0 = static_cast<float>(head) * tw / w, u1 = static_cast<float>(head + 1) * tw / w;
  const float v_top = static_cast<float>(layers_ - layer) * th / h,
              v_bottom = static_cast<float>(layers_ - 1 - layer) * th / h;
  list->AddImage(imguiTexture(grid_.texture), p0, ImVec2(p0.x + tw, p0.y + th), ImVec2(u0, v_top),
                 ImVec2(u1, v_bottom));
}

ModelGridRenderer::MapReply ModelGridRenderer::fetchMap(const MapRequest& request) {
  const model::ForwardResult& forward = *request.forward;
  const int n = forward.n, layer = request.index / std::max(1, forward.layout.n_head);
  MapReply reply;
  reply.weights = forward.map(request.index);  // kept (a copy), or recomputed
  if (request.weighting)
    reply.weights.array().rowwise() *=
        valueNormScales(*request.weighting, forward, layer).row(request.index % forward.layout.n_head).array();
  reply.allowed.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (forward.layout.keyAllowed(layer, i, j))
        reply.allowed[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)] = 255;
  return reply;
}

void ModelGridRenderer::drawMap(ImDrawList* list, const std::shared_ptr<const model::ForwardResult>& forward, int index,
                                unsigned revision, ImVec2 p0, ImVec2 p1, const CellView& view,
                                const MapContrast& contrast, const std::shared_ptr<const model::Model>& weighting) {
  const int n = forward->n;
  if (index != map_index_ || revision != map_revision_ || weighting.get() != map_weighting_) {
    map_index_ = index, map_revision_ = revision, map_weighting_ = weighting.get();
    map_wanted_ = map_worker_.request(MapRequest{forward, index, weighting});
    map_pending_ = true;
  }
  if (auto landed = map_worker_.take(); landed && landed->first == map_wanted_) {  // older replies: dropped
    const MapReply& r = landed->second;
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glBindTexture(GL_TEXTURE_2D, map_weights_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, n, n, 0, GL_RED, GL_FLOAT, r.weights.data());
    glBindTexture(GL_TEXTURE_2D, map_mask_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R8, n, n, 0, GL_RED, GL_UNSIGNED_BYTE, r.allowed.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    map_pending_ = false;
    map_stale_ = true;  // render again below
    map_max_ = 0;
    for (std::size_t k = 0; k < r.allowed.size(); ++k)
      if (r.allowed[k]) map_max_ = std::max(map_max_, r.weights.data()[k]);
  }
  if (map_pending_) {
    list->AddRectFilled(p0, p1, IM_COL32(64, 64, 71, 255));
    return;
  }
  const int width = std::max(1, static_cast<int>(p1.x - p0.x)), height = std::max(1, static_cast<int>(p1.y - p0.y));
  const bool same_view = map_view_.col0 == view.col0 && map_view_.row0 == view.row0 && map_view_.col1 == view.col1 &&
                         map_view_.row1 == view.row1;
  if (map_stale_ || map_.width != width || map_.height != height || !same_view || contrast != map_contrast_) {
    map_stale_ = false;
    resize(map_, width, height);
    map_view_ = view;
    map_contrast_ = contrast;
    render(map_, map_weights_, map_mask_, 0, 0, width, height, view, mapTop(), 0, n);
  }
  list->AddImage(imguiTexture(map_.texture), p0,
                 ImVec2(p0.x + static_cast<float>(width), p0.y + static_cast<float>(height)), ImVec2(0, 1),
                 ImVec2(1, 0));
}

void ModelGridRenderer::render(const Target& target, unsigned weights, unsigned mask, int x, int y, int w, int h,
                               const CellView& view, float top, int row_x0, int row_x1) {
  GLint previous_framebuffer = 0, previous_viewport[4] = {};
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &previous_framebuffer);
  glGetIntegerv(GL_VIEWPORT, previous_viewport);
  glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target.texture, 0);
  glViewport(x, y, w, h);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_BLEND);
  glUseProgram(program_);
  glBindVertexArray(vao_);
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  glUniform4f(glGetUniformLocation(program_, "u_rect"), 0, 0, fw, fh);
  glUniform2f(glGetUniformLocation(program_, "u_display"), fw, fh);
  glUniform4f(glGetUniformLocation(program_, "u_view"), view.col0, view.row0, view.col1, view.row1);
  glUniform2f(glGetUniformLocation(program_, "u_range"), 0.0f, top);
  setContrastUniforms(program_, &target == &map_ ? map_contrast_ : contrast_, row_x0, row_x1);
  glUniform3f(glGetUniformLocation(program_, "u_masked_color"), kMaskedColor.r / 255.0f, kMaskedColor.g / 255.0f,
              kMaskedColor.b / 255.0f);
  drawHeatmapQuad(program_, weights, mask, colormap_, previous_framebuffer, previous_viewport);
}

}  // namespace attnscope::app
