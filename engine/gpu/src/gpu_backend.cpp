// The GPU backend: uploads a Scene into storage buffers, runs one compute shader per stage (projection,
// scores, softmax, weighted sum, output projection, similarity) and keeps every result resident.
//
// Resident layout (row-major floats):
//   Q, K: (n_q | n_k, sum of d_k), head i in columns [k_col[i], k_col[i] + d_k)   -- the heads side by side
//   V, concat: (n_k | n_q, sum of d_v), head i in columns [v_col[i], ...)          -- a head's output is its
//                                                                                   slice of the concat
//   weights[i]: (n_q, n_k), one buffer per head (copied to an R32F texture only when the window asks)
#include "attnscope/gpu_backend.h"

#include <cmath>
#include <optional>
#include <vector>

#include "attnscope/cpu_backend.h"
#include "attnscope/error.h"
#include "attnscope/similarity.h"
#include "egl_context.h"
#include "gl_resources.h"
#include "gpu_memory.h"
#include "shader_library.h"

namespace attnscope {

using gpu::GlBuffer;

namespace {

constexpr unsigned kTile = 64;            // GEMM_BM = GEMM_BN in common.glsl
constexpr unsigned kFinishThreads = 64;   // local_size_x of similarity_finish.comp
using gpu::kPackedSimilarityBytes;
using gpu::kSimilarityRows;

unsigned groupsFor(std::size_t n, unsigned per) { return static_cast<unsigned>((n + per - 1) / per); }

// What must match for resident results to be reused by an incremental recompute or a read-back.
struct Shape {
  int n_q = 0, n_k = 0, d_model = 0;
  std::vector<int> d_k, d_v;
  bool own_key = false, own_value = false, has_w_o = false;
  bool operator==(const Shape&) const = default;
};

Shape shapeOf(const Scene& scene) {
  Shape s{scene.nQ(), scene.nK(), scene.d_model, {}, {}, scene.key.has_value(), scene.value.has_value(),
          scene.w_o.has_value()};
  for (const HeadParams& head : scene.heads) {
    s.d_k.push_back(head.dK());
    s.d_v.push_back(head.dV());
  }
  return s;
}

// Every head's W side by side, (d_model, sum of widths), and the biases (zeros where a head has none).
template <typename GetW, typename GetB>
bool stackHeads(const Scene& scene, GetW get_w, GetB get_b, std::vector<float>& w, std::vector<float>& b) {
  int width = 0;
  for (const HeadParams& head : scene.heads) width += static_cast<int>(get_w(head).cols());
  w.assign(static_cast<std::size_t>(scene.d_model) * static_cast<std::size_t>(width), 0.0f);
  b.assign(static_cast<std::size_t>(width), 0.0f);
  Eigen::Map<Matrix> stacked(w.data(), scene.d_model, width);
  bool any_bias = false;
  int col = 0;
  for (const HeadParams& head : scene.heads) {
    const Matrix& hw = get_w(head);
    stacked.middleCols(col, hw.cols()) = hw;
    if (const std::optional<RowVector>& hb = get_b(head)) {
      std::copy(hb->data(), hb->data() + hb->size(), b.begin() + col);
      any_bias = true;
    }
    col += static_cast<int>(hw.cols());
  }
  return any_bias;
}

}  // namespace

struct GpuBackend::Impl {
  std::unique_ptr<gpu::EglContext> egl;  // declared first so that it is destroyed last
  GpuOptions options;
  std::string renderer, version;
  GLint max_block_bytes = 0, max_texture = 0, max_groups_x = 0, max_groups_y = 0;
  gpu::ComputeProgram project, scores, softmax, weighted_sum, similarity_pair, similarity_finish;

  // [SECTION] resident state
  bool resident = false, analysis = true, similarity_current = false;
  Shape shape;
  std::vector<unsigned> k_col, v_col;
  unsigned sum_dk = 0, sum_dv = 0, mask_words = 0, similarity_groups = 0;
  unsigned valid_rows = 0;       // query rows with at least one key allowed
  unsigned similarity_rows = 0;  // query rows per similarity workgroup
  std::vector<float> scale;
  bool has_mask = false, bias_q = false, bias_k = false, bias_v = false;
  GlBuffer x_q, x_k, x_v, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o;
  GlBuffer q, k, v, mask, concat, output, partial, pairs, packed, cosine, js, score_scratch;
  std::vector<GlBuffer> weights;
  std::vector<GLuint> textures;
  std::vector<char> texture_stale;

  explicit Impl(const GpuOptions& opts) : options(opts) {
    if (options.context == GlContextMode::OwnHeadless) egl = std::make_unique<gpu::EglContext>();
    const GLubyte* version_text = glGetString(GL_VERSION);
    if (!version_text) throw GpuUnavailable("no current OpenGL context to use");
    version = reinterpret_cast<const char*>(version_text);
    renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    if (epoxy_gl_version() < 43 || epoxy_is_desktop_gl() == 0)
      throw GpuUnavailable("OpenGL 4.3 with compute shaders is needed; " + renderer + " offers " + version);
    glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &max_block_bytes);
    glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_texture);
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, 0, &max_groups_x);
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, 1, &max_groups_y);
    std::optional<gpu::GlStateGuard> guard;
    if (!egl) guard.emplace();
    const gpu::ShaderLibrary library(options.shader_dir);
    project = gpu::ComputeProgram(library, "project.comp");
    scores = gpu::ComputeProgram(library, "scores.comp");
    softmax = gpu::ComputeProgram(library, "softmax.comp");
    weighted_sum = gpu::ComputeProgram(library, "weighted_sum.comp");
    similarity_pair = gpu::ComputeProgram(library, "similarity_pair.comp");
    similarity_finish = gpu::ComputeProgram(library, "similarity_finish.comp");
    gpu::checkGl("building the compute shaders");
  }

  ~Impl() {
    if (egl) egl->makeCurrent();
    if (!textures.empty()) glDeleteTextures(static_cast<GLsizei>(textures.size()), textures.data());
  }

  int heads() const { return static_cast<int>(shape.d_k.size()); }
  const GlBuffer& keyInput() const { return shape.own_key ? x_k : x_q; }
  const GlBuffer& valueInput() const { return shape.own_value ? x_v : keyInput(); }

  std::size_t heldBytes() const {
    std::size_t bytes = 0;
    for (const GlBuffer* b : {&x_q, &x_k, &x_v, &w_q, &w_k, &w_v, &b_q, &b_k, &b_v, &w_o, &b_o, &q, &k, &v, &mask,
                              &concat, &output, &partial, &pairs, &packed, &cosine, &js, &score_scratch})
      bytes += b->bytes();
    for (const GlBuffer& b : weights) bytes += b.bytes();
    for (std::size_t i = 0; i < textures.size(); ++i)
      bytes += static_cast<std::size_t>(shape.n_q) * static_cast<std::size_t>(shape.n_k) * sizeof(float);
    return bytes;
  }

  // [SECTION] limits: refuse a scene the device cannot hold before allocating any of it
  void checkFits(const Scene& scene) const {
    const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
    const std::size_t largest = std::max({n_q * n_k, n_q * static_cast<std::size_t>(scene.concatWidth()),
                                          std::max(n_q, n_k) * static_cast<std::size_t>(scene.d_model)}) *
                                sizeof(float);
    std::size_t widest = 0;
    for (const HeadParams& head : scene.heads) widest = std::max<std::size_t>(widest, head.dK());
    const std::size_t largest_qk = std::max(n_q, n_k) * widest * scene.heads.size() * sizeof(float);
    if (std::max(largest, largest_qk) > static_cast<std::size_t>(max_block_bytes))
      throw InputError("gpu buffer", "at most " + std::to_string(max_block_bytes >> 20) + " MiB in one buffer (" +
                                         renderer + ")",
                       std::to_string(std::max(largest, largest_qk) >> 20) + " MiB for one head's weights or Q/K");
    if (n_q > static_cast<std::size_t>(max_groups_x) || groupsFor(n_q, kTile) > static_cast<unsigned>(max_groups_y))
      throw InputError("query rows", "at most " + std::to_string(max_groups_x) + " on " + renderer,
                       std::to_string(n_q));
    const std::size_t need = estimateGpuBytes(scene, options.context == GlContextMode::UseCurrent);
    const gpu::MemoryBudget budget = gpu::memoryBudget(options.memory_budget_bytes, heldBytes());
    if (need > budget.bytes)
      throw InputError("gpu memory", "at most " + std::to_string(budget.bytes >> 20) + " MiB (" + budget.source + ")",
                       std::to_string(need >> 20) + " MiB for this scene");
  }

  // [SECTION] upload
  void uploadProjections(const Scene& scene) {
    std::vector<float> w, b;
    bias_q = stackHeads(
        scene, [](const HeadParams& p) -> const Matrix& { return p.w_q; },
        [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_q; }, w, b);
    w_q.upload(w.data(), w.size() * sizeof(float));
    b_q.upload(b.data(), b.size() * sizeof(float));
    bias_k = stackHeads(
        scene, [](const HeadParams& p) -> const Matrix& { return p.w_k; },
        [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_k; }, w, b);
    w_k.upload(w.data(), w.size() * sizeof(float));
    b_k.upload(b.data(), b.size() * sizeof(float));
    bias_v = stackHeads(
        scene, [](const HeadParams& p) -> const Matrix& { return p.w_v; },
        [](const HeadParams& p) -> const std::optional<RowVector>& { return p.b_v; }, w, b);
    w_v.upload(w.data(), w.size() * sizeof(float));
    b_v.upload(b.data(), b.size() * sizeof(float));
    scale.clear();
    for (int i = 0; i < scene.numHeads(); ++i) scale.push_back(scene.headScale(i));
  }

  void upload(const Scene& scene) {
    shape = shapeOf(scene);
    const std::size_t n_q = static_cast<std::size_t>(shape.n_q), n_k = static_cast<std::size_t>(shape.n_k);
    const std::size_t d = static_cast<std::size_t>(shape.d_model), h = shape.d_k.size();
    k_col.clear();
    v_col.clear();
    sum_dk = sum_dv = 0;
    for (std::size_t i = 0; i < h; ++i) {
      k_col.push_back(sum_dk);
      v_col.push_back(sum_dv);
      sum_dk += static_cast<unsigned>(shape.d_k[i]);
      sum_dv += static_cast<unsigned>(shape.d_v[i]);
    }
    x_q.upload(scene.query.data(), n_q * d * sizeof(float));
    if (scene.key) x_k.upload(scene.key->data(), n_k * d * sizeof(float));
    if (scene.value) x_v.upload(scene.value->data(), n_k * d * sizeof(float));
    uploadProjections(scene);
    if (scene.w_o) {
      w_o.upload(scene.w_o->data(), static_cast<std::size_t>(scene.w_o->size()) * sizeof(float));
      const RowVector bias = scene.b_o ? *scene.b_o : RowVector::Zero(shape.d_model);
      b_o.upload(bias.data(), d * sizeof(float));
      output.ensure(n_q * d * sizeof(float));
    }

    // allowedMask(scene), the one place masks combine, packed 32 keys to a word; bit set = may attend.
    has_mask = scene.hasMask();
    mask_words = groupsFor(n_k, 32);
    std::vector<std::uint32_t> bits(has_mask ? n_q * mask_words : 1, 0u);
    valid_rows = static_cast<unsigned>(n_q);
    if (has_mask) {
      const MaskMatrix allowed = allowedMask(scene);
      for (std::size_t i = 0; i < n_q; ++i) {
        bool any = false;
        for (std::size_t j = 0; j < n_k; ++j)
          if (allowed(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))) {
            bits[i * mask_words + j / 32] |= 1u << (j % 32);
            any = true;
          }
        if (!any) --valid_rows;
      }
    }
    mask.upload(bits.data(), bits.size() * sizeof(std::uint32_t));

    q.ensure(n_q * sum_dk * sizeof(float));
    k.ensure(n_k * sum_dk * sizeof(float));
    v.ensure(n_k * sum_dv * sizeof(float));
    concat.ensure(n_q * sum_dv * sizeof(float));
    weights.resize(h);
    for (GlBuffer& w : weights) w.ensure(n_q * n_k * sizeof(float));
    if (textures.size() > h) {
      glDeleteTextures(static_cast<GLsizei>(textures.size() - h), textures.data() + h);
      textures.resize(h);
    }
    texture_stale.assign(h, 1);
    // At least ~2048 weights per workgroup, so that short rows do not leave most invocations idle.
    similarity_rows = std::max<unsigned>(kSimilarityRows, 2048 / static_cast<unsigned>(n_k));
    similarity_groups = groupsFor(n_q, similarity_rows);
    partial.ensure(h * h * similarity_groups * 2 * sizeof(float));
    pairs.ensure(h * (h + 1) / 2 * 4 * sizeof(std::uint32_t));
    cosine.ensure(h * h * sizeof(float));
    js.ensure(h * h * sizeof(float));
    similarity_current = false;
    gpu::checkGl("uploading the scene");
  }

  // [SECTION] stages; each dispatch is followed by a barrier so the next stage sees its writes
  static void dispatch(unsigned x, unsigned y) {
    glDispatchCompute(std::max(x, 1u), std::max(y, 1u), 1);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
  }

  // out[:, col0 : col0 + width] = input (rows, k) W[:, col0 : col0 + width] + bias; W, bias and out have ld columns.
  void projectColumns(const GlBuffer& input, unsigned rows, unsigned k_size, const GlBuffer& w, const GlBuffer& bias,
                      bool with_bias, const GlBuffer& out, unsigned ld, unsigned col0, unsigned width) const {
    project.use();
    input.bind(0);
    w.bind(1);
    bias.bind(2);
    out.bind(3);
    project.set("u_m", rows);
    project.set("u_n", width);
    project.set("u_k", k_size);
    project.set("u_ld", ld);
    project.set("u_col0", col0);
    project.set("u_has_bias", with_bias);
    dispatch(groupsFor(width, kTile), groupsFor(rows, kTile));
  }

  // Q, K, V of the heads whose columns are [k0, k0 + dk) and [v0, v0 + dv) (all heads, or one).
  void projectHeads(unsigned k0, unsigned dk, unsigned v0, unsigned dv) const {
    const unsigned n_q = static_cast<unsigned>(shape.n_q), n_k = static_cast<unsigned>(shape.n_k);
    const unsigned d = static_cast<unsigned>(shape.d_model);
    projectColumns(x_q, n_q, d, w_q, b_q, bias_q, q, sum_dk, k0, dk);
    projectColumns(keyInput(), n_k, d, w_k, b_k, bias_k, k, sum_dk, k0, dk);
    projectColumns(valueInput(), n_k, d, w_v, b_v, bias_v, v, sum_dv, v0, dv);
  }

  // Scaled, masked scores of head `head` into `out` (n_q, n_k).
  void scoreHead(int head, const GlBuffer& out) const {
    const std::size_t i = static_cast<std::size_t>(head);
    scores.use();
    q.bind(0);
    k.bind(1);
    mask.bind(2);
    out.bind(3);
    scores.set("u_n_q", static_cast<unsigned>(shape.n_q));
    scores.set("u_n_k", static_cast<unsigned>(shape.n_k));
    scores.set("u_d_k", static_cast<unsigned>(shape.d_k[i]));
    scores.set("u_ld", sum_dk);
    scores.set("u_col0", k_col[i]);
    scores.set("u_scale", scale[i]);
    scores.set("u_has_mask", has_mask);
    scores.set("u_mask_words", mask_words);
    dispatch(groupsFor(static_cast<std::size_t>(shape.n_k), kTile), groupsFor(static_cast<std::size_t>(shape.n_q), kTile));
  }

  // Scores, softmax and weighted sum of one head (its Q, K, V already projected).
  void attendHead(int head) {
    const std::size_t i = static_cast<std::size_t>(head);
    scoreHead(head, weights[i]);
    softmax.use();
    weights[i].bind(0);
    softmax.set("u_n_k", static_cast<unsigned>(shape.n_k));
    dispatch(static_cast<unsigned>(shape.n_q), 1);
    weighted_sum.use();
    weights[i].bind(0);
    v.bind(1);
    concat.bind(2);
    weighted_sum.set("u_n_q", static_cast<unsigned>(shape.n_q));
    weighted_sum.set("u_n_k", static_cast<unsigned>(shape.n_k));
    weighted_sum.set("u_d_v", static_cast<unsigned>(shape.d_v[i]));
    weighted_sum.set("u_ld", sum_dv);
    weighted_sum.set("u_col0", v_col[i]);
    dispatch(groupsFor(static_cast<std::size_t>(shape.d_v[i]), kTile), groupsFor(static_cast<std::size_t>(shape.n_q), kTile));
    texture_stale[i] = 1;
  }

  void outputProjection() const {
    if (!shape.has_w_o) return;
    const unsigned d = static_cast<unsigned>(shape.d_model);
    projectColumns(concat, static_cast<unsigned>(shape.n_q), sum_dv, w_o, b_o, true, output, d, 0, d);
  }

  // Partials of the pairs (a, b), a <= b, that involve `head` (every pair when head < 0), then the matrices.
  void similarity(int head) {
    const unsigned h = static_cast<unsigned>(heads());
    std::vector<std::uint32_t> list;  // (a, b, first partial, 0) per pair
    for (unsigned a = 0; a < h; ++a)
      for (unsigned b = a; b < h; ++b)
        if (head < 0 || a == static_cast<unsigned>(head) || b == static_cast<unsigned>(head))
          list.insert(list.end(), {a, b, (a * h + b) * similarity_groups, 0u});
    const unsigned count = static_cast<unsigned>(list.size() / 4);
    pairs.upload(list.data(), list.size() * sizeof(std::uint32_t));
    similarity_pair.use();
    partial.bind(2);
    pairs.bind(3);
    similarity_pair.set("u_n_q", static_cast<unsigned>(shape.n_q));
    similarity_pair.set("u_n_k", static_cast<unsigned>(shape.n_k));
    similarity_pair.set("u_rows_per_group", similarity_rows);
    const std::size_t map_bytes = static_cast<std::size_t>(shape.n_q) * static_cast<std::size_t>(shape.n_k) * sizeof(float);
    if (map_bytes * h <= kPackedSimilarityBytes) {  // small maps: one dispatch, dispatch overhead dominates
      packed.ensure(map_bytes * h);
      for (unsigned i = 0; i < h; ++i) {
        glBindBuffer(GL_COPY_READ_BUFFER, weights[i].id());
        glBindBuffer(GL_COPY_WRITE_BUFFER, packed.id());
        glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, static_cast<GLintptr>(i * map_bytes),
                            static_cast<GLsizeiptr>(map_bytes));
      }
      glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
      packed.bind(0);
      packed.bind(1);
      similarity_pair.set("u_head_stride", static_cast<unsigned>(map_bytes / sizeof(float)));
      similarity_pair.set("u_first_pair", 0u);
      glDispatchCompute(similarity_groups, count, 1);
    } else {
      similarity_pair.set("u_head_stride", 0u);
      for (unsigned p = 0; p < count; ++p) {  // pairs write disjoint partials: one barrier after all
        weights[list[4 * p]].bind(0);
        weights[list[4 * p + 1]].bind(1);
        similarity_pair.set("u_first_pair", p);
        glDispatchCompute(similarity_groups, 1, 1);
      }
    }
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    similarity_finish.use();
    partial.bind(0);
    cosine.bind(1);
    js.bind(2);
    similarity_finish.set("u_heads", h);
    similarity_finish.set("u_groups", similarity_groups);
    similarity_finish.set("u_valid_rows", valid_rows);
    dispatch(groupsFor(h * h, kFinishThreads), 1);
    similarity_current = true;
  }

  void computeAll() {
    projectHeads(0, sum_dk, 0, sum_dv);
    for (int i = 0; i < heads(); ++i) attendHead(i);
    outputProjection();
    similarity_current = false;
    if (analysis) similarity(-1);
    gpu::checkGl("computing attention");
  }

  void requireResident(const Scene& scene) const {
    if (!resident) throw InputError("gpu backend", "computeResident before a read-back or recompute", "nothing computed");
    if (shapeOf(scene) != shape)
      throw InputError("scene", "the shape computed last (call computeResident after a shape change)", "another shape");
  }

  // [SECTION] read-back (export, the command line); only_head >= 0 reads that head alone
  void readBack(const Scene& scene, Result& result, const ComputeOptions& opts, int only_head) {
    requireResident(scene);
    if (opts.analysis && !similarity_current) similarity(-1);
    const int h = heads();
    const Eigen::Index n_q = shape.n_q, n_k = shape.n_k;
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    Matrix qs(n_q, sum_dk), ks(n_k, sum_dk), vs(n_k, sum_dv);
    q.download(qs.data(), static_cast<std::size_t>(qs.size()) * sizeof(float));
    k.download(ks.data(), static_cast<std::size_t>(ks.size()) * sizeof(float));
    v.download(vs.data(), static_cast<std::size_t>(vs.size()) * sizeof(float));
    result.concat.resize(n_q, sum_dv);
    concat.download(result.concat.data(), static_cast<std::size_t>(result.concat.size()) * sizeof(float));
    if (shape.has_w_o) {
      result.output.resize(n_q, shape.d_model);
      output.download(result.output.data(), static_cast<std::size_t>(result.output.size()) * sizeof(float));
    } else {
      result.output = result.concat;
    }
    result.heads.resize(static_cast<std::size_t>(h));
    for (int i = 0; i < h; ++i) {
      if (only_head >= 0 && i != only_head) continue;
      const std::size_t s = static_cast<std::size_t>(i);
      HeadResult& hr = result.heads[s];
      hr.q = qs.middleCols(k_col[s], shape.d_k[s]);
      hr.k = ks.middleCols(k_col[s], shape.d_k[s]);
      hr.v = vs.middleCols(v_col[s], shape.d_v[s]);
      hr.output = result.concat.middleCols(v_col[s], shape.d_v[s]);
      hr.weights.resize(n_q, n_k);
      weights[s].download(hr.weights.data(), static_cast<std::size_t>(hr.weights.size()) * sizeof(float));
      if (opts.keep_scores) {  // scores are not kept resident (the softmax overwrites them): recompute them
        score_scratch.ensure(static_cast<std::size_t>(n_q * n_k) * sizeof(float));
        scoreHead(i, score_scratch);
        glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
        hr.scores.resize(n_q, n_k);
        score_scratch.download(hr.scores.data(), static_cast<std::size_t>(hr.scores.size()) * sizeof(float));
      } else {
        hr.scores.resize(0, 0);
      }
    }
    result.warnings = fullyMaskedRowWarnings(scene);
    if (opts.analysis) {
      result.similarity.cosine.resize(h, h);
      result.similarity.js.resize(h, h);
      cosine.download(result.similarity.cosine.data(), static_cast<std::size_t>(h * h) * sizeof(float));
      js.download(result.similarity.js.data(), static_cast<std::size_t>(h * h) * sizeof(float));
      // Statistics on the CPU from the read-back weights: the same function as the reference, so exact to it.
      if (only_head < 0 || result.stats.size() != static_cast<std::size_t>(h)) {
        result.stats.clear();
        for (const HeadResult& hr : result.heads) result.stats.push_back(headStats(hr.weights));
      } else {
        result.stats[static_cast<std::size_t>(only_head)] = headStats(result.heads[static_cast<std::size_t>(only_head)].weights);
      }
    } else {
      result.similarity = {};
      result.stats.clear();
    }
    gpu::checkGl("reading results back");
  }

  GLuint texture(int head) {
    const std::size_t i = static_cast<std::size_t>(head);
    if (shape.n_k > max_texture || shape.n_q > max_texture)
      throw InputError("weights texture", "at most " + std::to_string(max_texture) + " texels a side on " + renderer,
                       shapeString(shape.n_q, shape.n_k));
    if (textures.size() <= i) textures.resize(static_cast<std::size_t>(heads()), 0);
    if (!textures[i]) {
      glGenTextures(1, &textures[i]);
      glBindTexture(GL_TEXTURE_2D, textures[i]);
      glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32F, shape.n_k, shape.n_q);  // n_k wide, n_q tall: row i = query i
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
      texture_stale[i] = 1;
    }
    if (texture_stale[i]) {  // a copy on the GPU, from the weights buffer through the pixel-unpack binding
      glMemoryBarrier(GL_PIXEL_BUFFER_BARRIER_BIT);
      glBindBuffer(GL_PIXEL_UNPACK_BUFFER, weights[i].id());
      glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
      glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
      glBindTexture(GL_TEXTURE_2D, textures[i]);
      glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, shape.n_k, shape.n_q, GL_RED, GL_FLOAT, nullptr);
      texture_stale[i] = 0;
    }
    gpu::checkGl("updating a weights texture");
    return textures[i];
  }
};

// [SECTION] public interface: each call makes the context current and, on the window's, restores its state
namespace {
struct CallScope {
  explicit CallScope(const gpu::EglContext* egl) {
    if (egl)
      egl->makeCurrent();
    else
      guard.emplace();
  }
  std::optional<gpu::GlStateGuard> guard;
};
}  // namespace

GpuBackend::GpuBackend(const GpuOptions& options) : impl_(std::make_unique<Impl>(options)) {}
GpuBackend::~GpuBackend() = default;

std::string GpuBackend::device() const { return impl_->renderer + ", OpenGL " + impl_->version; }

void GpuBackend::computeResident(const Scene& scene, const ComputeOptions& options) {
  validateScene(scene);
  CallScope scope(impl_->egl.get());
  impl_->resident = false;
  impl_->checkFits(scene);
  impl_->analysis = options.analysis;
  impl_->upload(scene);
  impl_->computeAll();
  impl_->resident = true;
}

void GpuBackend::recomputeResident() {
  CallScope scope(impl_->egl.get());
  if (!impl_->resident) throw InputError("gpu backend", "computeResident before recomputeResident", "nothing computed");
  impl_->computeAll();
}

void GpuBackend::recomputeHeadResident(const Scene& scene, int head) {
  validateScene(scene);
  if (head < 0 || head >= scene.numHeads())
    throw InputError("head", "0 to " + std::to_string(scene.numHeads() - 1), std::to_string(head));
  if (!impl_->resident || shapeOf(scene) != impl_->shape) {  // a new shape: everything is recomputed
    computeResident(scene, {.keep_scores = true, .analysis = impl_->analysis});
    return;
  }
  CallScope scope(impl_->egl.get());
  Impl& s = *impl_;
  const std::size_t i = static_cast<std::size_t>(head);
  s.uploadProjections(scene);
  s.projectHeads(s.k_col[i], static_cast<unsigned>(s.shape.d_k[i]), s.v_col[i], static_cast<unsigned>(s.shape.d_v[i]));
  s.attendHead(head);
  s.outputProjection();
  if (s.similarity_current) s.similarity(head);
  gpu::checkGl("recomputing a head");
}

unsigned GpuBackend::weightsTexture(int head) const {
  if (!impl_->resident) throw InputError("gpu backend", "computeResident before weightsTexture", "nothing computed");
  if (head < 0 || head >= impl_->heads())
    throw InputError("head", "0 to " + std::to_string(impl_->heads() - 1), std::to_string(head));
  CallScope scope(impl_->egl.get());
  return impl_->texture(head);
}

void GpuBackend::readBack(const Scene& scene, Result& result, const ComputeOptions& options) {
  CallScope scope(impl_->egl.get());
  impl_->readBack(scene, result, options, -1);
}

void GpuBackend::finish() {
  CallScope scope(impl_->egl.get());
  glFinish();
  gpu::checkGl("finishing");
}

void GpuBackend::computeInto(const Scene& scene, Result& result, const ComputeOptions& options) {
  computeResident(scene, options);
  readBack(scene, result, options);
}

void GpuBackend::recomputeHead(const Scene& scene, int head, Result& result) {
  const bool same = impl_->resident && shapeOf(scene) == impl_->shape &&
                    result.heads.size() == static_cast<std::size_t>(scene.numHeads());
  if (!same) {
    computeInto(scene, result);
    return;
  }
  const bool keep_scores = result.heads[static_cast<std::size_t>(head)].scores.size() > 0;
  recomputeHeadResident(scene, head);
  CallScope scope(impl_->egl.get());
  impl_->readBack(scene, result, {.keep_scores = keep_scores, .analysis = true}, head);
}

}  // namespace attnscope
