// The GPU backend's flash path and tiles: each head's output and row statistics (m, l) by key blocks with an
// online softmax (flash_forward.comp), and any tile of weights recomputed from Q, K and (m, l)
// (weight_tile.comp), read back or written straight into a texture the caller draws.
//
// Hand-offs, by the OpenGL 4.3 memory model: flash_forward -> output projection or tile (storage reads):
// GL_SHADER_STORAGE_BARRIER_BIT; tile -> glGetBufferSubData: GL_BUFFER_UPDATE_BARRIER_BIT; tile -> a draw
// sampling the texture: GL_TEXTURE_FETCH_BARRIER_BIT (and image access/update bits for later image stores or
// texture reads; the R8 mask image likewise). Within a dispatch, shared memory passes through memoryBarrierShared() +
// barrier() only.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "gpu_backend_impl.h"
#include "gpu_memory.h"

namespace attnscope {

using gpu::groupsFor;

namespace {
constexpr unsigned kFlashRows = 64;       // FLASH_ROWS in flash_forward.comp
constexpr unsigned kTileSide = 8;         // local size of weight_tile.comp
constexpr unsigned kMaxFlashWidth = 256;  // the widest head the register arrays take
// Loop iterations one invocation may run in one dispatch, all its loops together: llvmpipe's gallivm ends a loop
// nest after 65535 iterations (silently: a tile pooled over 24 x 52 cells at d_k 64 came out wrong), and a
// hardware GPU's watchdog resets a dispatch that runs for seconds. Half the limit, for the loops not counted.
constexpr std::size_t kLoopBudget = 32768;
// Keys per block: 8 (fewer for very wide heads: K and V blocks stay within 16 KiB of shared memory). On llvmpipe
// 8 ran n = 1024, 8 heads, d_k 64 in 7.7 s against 13.7 s with 32 (one run each on a loaded machine): loops
// over a short block are unrolled, and the private arrays stay in registers.
unsigned flashBlockKeys(unsigned width) { return std::clamp(2048u / width, 4u, 8u); }
// Invocations per row (FLASH_LANES): a lane holds a quarter (or half) of the row's q and output in registers. One
// invocation holding all 2 x 128 floats of a 128-wide row spilled on an H100 (1 TFLOP/s at n = 4096, 32 heads).
// Shared memory: K and V blocks 2 FLASH_BK FLASH_D floats (<= 16 KiB) and the partial sums FLASH_LANES FLASH_BK
// 64 floats (<= 8 KiB), within the 32 KiB every OpenGL 4.3 device has.
unsigned flashLanes(unsigned width) { return width >= 128 ? 4u : width >= 64 ? 2u : 1u; }
}  // namespace

unsigned GpuBackend::Impl::flashWidth() const {
  int widest = 1;
  for (std::size_t i = 0; i < shape.d_k.size(); ++i) widest = std::max({widest, shape.d_k[i], shape.d_v[i]});
  return (static_cast<unsigned>(widest) + 7u) / 8u * 8u;
}

const GpuBackend::Impl::FlashPrograms& GpuBackend::Impl::flashPrograms() {
  const unsigned width = flashWidth();
  if (width > kMaxFlashWidth)
    throw InputError("d_k, d_v", "at most " + std::to_string(kMaxFlashWidth) + " on the GPU flash path",
                     std::to_string(width));
  auto found = flash_programs.find(width);
  if (found != flash_programs.end()) return found->second;
  // K and V blocks take 2 FLASH_BK FLASH_D floats of shared memory (flashBlockKeys).
  const unsigned block = flashBlockKeys(width);
  const std::string defines = "#define FLASH_D " + std::to_string(width) + "u\n#define FLASH_BK " +
                              std::to_string(block) + "u\n#define FLASH_LANES " + std::to_string(flashLanes(width)) +
                              "u\n#define FLASH_INVOCATIONS " + std::to_string(kFlashRows * flashLanes(width)) + "\n";
  const gpu::ShaderLibrary library(options.shader_dir);
  FlashPrograms programs{gpu::ComputeProgram(library, "flash_forward.comp", defines),
                         gpu::ComputeProgram(library, "weight_tile.comp", defines),
                         gpu::ComputeProgram(library, "weight_tile.comp", defines + "#define TILE_TO_IMAGE\n")};
  gpu::checkGl("building the flash shaders");
  return flash_programs.emplace(width, std::move(programs)).first->second;
}

void GpuBackend::Impl::bindKeyMask(const gpu::ComputeProgram& program) const {
  mask.bind(2);
  padding.bind(6);
  program.set("u_explicit_mask", explicit_mask);
  program.set("u_causal", causal);
  program.set("u_has_padding", has_padding);
  program.set("u_mask_words", mask_words);
  program.set("u_window", window);
  program.set("u_score_cap", score_cap);
}

void GpuBackend::Impl::loadHead(const Scene& scene, const GivenHead& head) {
  if (!head.q || !head.k) throw InputError("q, k", "both given", "a null matrix");
  const Matrix& hq = *head.q;
  const Matrix& hk = *head.k;
  const float cap = head.score_cap;
  const std::size_t n_q = static_cast<std::size_t>(scene.nQ()), n_k = static_cast<std::size_t>(scene.nK());
  const std::size_t d = static_cast<std::size_t>(hq.cols());
  if (hq.rows() != scene.nQ() || hk.rows() != scene.nK() || hk.cols() != hq.cols() || d == 0)
    throw InputError("q, k", shapeString(scene.nQ(), hq.cols()) + " and " + shapeString(scene.nK(), hq.cols()),
                     shapeString(hq.rows(), hq.cols()) + " and " + shapeString(hk.rows(), hk.cols()));
  if (d > kMaxFlashWidth)
    throw InputError("head width", "at most " + std::to_string(kMaxFlashWidth) + " on the GPU", std::to_string(d));
  if (std::max(n_q, n_k) * d * sizeof(float) > max_block_bytes)
    throw InputError("gpu buffer", "at most " + std::to_string(max_block_bytes >> 20) + " MiB in one buffer (" +
                                       renderer + ")",
                     std::to_string((std::max(n_q, n_k) * d * sizeof(float)) >> 20) + " MiB for one head's Q or K");
  if (n_q > static_cast<std::size_t>(max_groups_x))
    throw InputError("query rows", "at most " + std::to_string(max_groups_x) + " on " + renderer, std::to_string(n_q));
  constexpr std::size_t kValueWidth = 8;  // the flash pass's output is not used: the narrowest V it takes, zeros
  const std::size_t need = (n_q + n_k) * d * sizeof(float) + n_k * kValueWidth * sizeof(float) +
                           n_q * (kValueWidth + 2) * sizeof(float) + (explicit_mask ? n_q * (n_k / 8 + 4) : n_k / 8);
  const gpu::MemoryBudget budget = gpu::memoryBudget(options.memory_budget_bytes, heldBytes());
  if (need > budget.bytes)
    throw InputError("gpu memory", "at most " + std::to_string(budget.bytes >> 20) + " MiB (" + budget.source + ")",
                     std::to_string(need >> 20) + " MiB for this head");

  if (!textures.empty()) glDeleteTextures(static_cast<GLsizei>(textures.size()), textures.data());
  textures.clear();
  texture_stale.clear();
  weight_groups.clear();
  flash = true;
  analysis = similarity_current = false;
  shape = gpu::Shape{.n_q = scene.nQ(), .n_k = scene.nK(), .d_model = 0, .d_k = {static_cast<int>(d)},
                     .d_v = {static_cast<int>(kValueWidth)}};
  k_col = {0}, v_col = {0};
  sum_dk = static_cast<unsigned>(d), sum_dv = static_cast<unsigned>(kValueWidth);
  head_scales = {1.0f};  // the scale is folded into q
  std::uint32_t one_bits = 0;
  std::memcpy(&one_bits, &head_scales[0], sizeof one_bits);
  const std::uint32_t table[8] = {0u, sum_dk, 0u, sum_dv, one_bits, 0u, 0u, 0u};
  heads_table.upload(table, sizeof table);
  q.upload(hq.data(), n_q * d * sizeof(float));  // row-major (types.h): (n, d) as the shaders index it
  k.upload(hk.data(), n_k * d * sizeof(float));
  const std::vector<float> zeros(n_k * kValueWidth, 0.0f);
  v.upload(zeros.data(), zeros.size() * sizeof(float));
  concat.ensure(n_q * kValueWidth * sizeof(float));

  // The mask as upload() sets it, with the forward's sliding window and soft cap.
  explicit_mask = scene.mask == MaskKind::Explicit;
  causal = scene.mask == MaskKind::Causal;
  window = causal ? static_cast<unsigned>(std::max(0, scene.sliding_window)) : 0u;
  score_cap = cap > 0 ? cap : 0.0f;
  has_padding = std::any_of(scene.key_padding.begin(), scene.key_padding.end(), [](std::uint8_t p) { return p != 0; });
  mask_words = groupsFor(n_k, 32);
  if (explicit_mask && (scene.explicit_mask.rows() != scene.nQ() || scene.explicit_mask.cols() != scene.nK()))
    throw InputError("explicit_mask", shapeString(scene.nQ(), scene.nK()),
                     shapeString(scene.explicit_mask.rows(), scene.explicit_mask.cols()));
  uploadKeyMask(scene, explicit_mask);

  if (head.row_max && head.row_sum) {
    if (head.row_max->size() != scene.nQ() || head.row_sum->size() != scene.nQ())
      throw InputError("row statistics", std::to_string(scene.nQ()) + " rows",
                       std::to_string(head.row_max->size()) + " and " + std::to_string(head.row_sum->size()));
    std::vector<float> ml(2 * n_q);
    for (std::size_t i = 0; i < n_q; ++i) {
      ml[2 * i] = (*head.row_max)[static_cast<Eigen::Index>(i)];
      ml[2 * i + 1] = (*head.row_sum)[static_cast<Eigen::Index>(i)];
    }
    stats.upload(ml.data(), ml.size() * sizeof(float));
  } else {
    stats.ensure(n_q * 2 * sizeof(float));
    flashHeads(0, 1);  // (m, l) of every row; its output (of the zero V) is not read
  }
  gpu::checkGl("uploading a head's Q and K");
}

void GpuBackend::Impl::flashHeads(int first, int count) {
  const FlashPrograms& programs = flashPrograms();
  const gpu::StageTimer::Scope timed = timer.scope("flash attention");
  const unsigned head0 = static_cast<unsigned>(first);
  bindHeadsStage(programs.forward, head0, head0);
  bindKeyMask(programs.forward);
  q.bind(0);
  k.bind(1);
  v.bind(3);
  concat.bind(5);
  stats.bind(7);
  programs.forward.set("u_ld_k", sum_dk);
  programs.forward.set("u_ld_v", sum_dv);
  // Keys per dispatch within the loop budget: per block of FLASH_BK keys and one invocation, the staging loop (9
  // loads per vec4 pair), the partial dot products and the output update (block times the lane's vec4 columns),
  // the partial sums written and summed (block times lanes + 1), the softmax, the rescale.
  const std::size_t width = flashWidth(), block = flashBlockKeys(static_cast<unsigned>(width));
  const std::size_t lanes = flashLanes(static_cast<unsigned>(width)), cols = (width / 4 + lanes - 1) / lanes;
  const std::size_t staging = (block * width / 4 + kFlashRows * lanes - 1) / (kFlashRows * lanes);
  const std::size_t per_block = 1 + 9 * staging + 2 * block * cols + block * (lanes + 3) + cols;
  const unsigned chunk = static_cast<unsigned>(std::max<std::size_t>(1, (kLoopBudget - 8 * width) / per_block) * block);
  const unsigned n_k = static_cast<unsigned>(shape.n_k);
  for (unsigned key0 = 0; key0 < n_k; key0 += chunk) {
    programs.forward.set("u_key0", key0);
    programs.forward.set("u_key1", std::min(n_k, key0 + chunk));
    programs.forward.set("u_first_chunk", key0 == 0);
    programs.forward.set("u_last_chunk", key0 + chunk >= n_k);
    glDispatchCompute(groupsFor(static_cast<std::size_t>(shape.n_q), kFlashRows), 1, static_cast<unsigned>(count));
    // The next chunk reads the state this one wrote; the output projection and tiles read the last one's.
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
  }
}

void GpuBackend::Impl::weightTile(const TileRequest& request, int y0, int y1, Tile* tile, GLuint texture,
                                  GLuint mask_texture) {
  if (request.head < 0 || request.head >= heads())
    throw InputError("head", "0 to " + std::to_string(heads() - 1), std::to_string(request.head));
  const int n_q = shape.n_q, n_k = shape.n_k;
  const int row0 = request.row0, row1 = request.row1 < 0 ? n_q : request.row1;
  const int col0 = request.col0, col1 = request.col1 < 0 ? n_k : request.col1;
  const auto check_range = [](const char* field, int lo, int hi, int n) {
    if (lo < 0 || hi > n || lo >= hi)
      throw InputError(field, "a range A:B with 0 <= A < B <= " + std::to_string(n),
                       std::to_string(lo) + ":" + std::to_string(hi));
  };
  check_range("rows", row0, row1, n_q);
  check_range("cols", col0, col1, n_k);
  checkKeyScale(request.key_scale, n_k);
  const int rows = row1 - row0, cols = col1 - col0;
  const bool pooled = request.pooling != Pooling::None;
  const int out_rows = pooled ? request.out_rows : rows, out_cols = pooled ? request.out_cols : cols;
  if (pooled && (out_rows < 1 || out_cols < 1 || out_rows > (1 << 16) || out_cols > (1 << 16)))
    throw InputError("pooled size", "1 to 65536 blocks a side",
                     std::to_string(out_rows) + " x " + std::to_string(out_cols));
  if (!pooled && static_cast<long long>(rows) * cols > (1LL << 28))
    throw InputError("tile", "at most 2^28 cells unpooled (pool a larger range)", shapeString(rows, cols));
  if (y1 < 0) y1 = out_rows;
  check_range("output rows", y0, y1, out_rows);
  const int band_rows = y1 - y0;

  // Each output cell's query rows and keys, relative to the tile: pooledRange as the CPU's weightTile uses.
  std::vector<std::uint32_t> ranges;
  ranges.reserve(2 * static_cast<std::size_t>(out_rows + out_cols));
  for (int y = 0; y < out_rows; ++y) {
    const auto [lo, hi] = pooled ? pooledRange(y, out_rows, rows) : std::pair<int, int>{y, y + 1};
    ranges.insert(ranges.end(), {static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi)});
  }
  for (int x = 0; x < out_cols; ++x) {
    const auto [lo, hi] = pooled ? pooledRange(x, out_cols, cols) : std::pair<int, int>{x, x + 1};
    ranges.insert(ranges.end(), {static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi)});
  }
  tile_ranges.upload(ranges.data(), ranges.size() * sizeof(std::uint32_t));

  const FlashPrograms& programs = flashPrograms();
  const gpu::ComputeProgram& program = texture ? programs.tile_to_image : programs.tile;
  const std::size_t h = static_cast<std::size_t>(request.head);
  program.use();
  bindKeyMask(program);
  q.bind(0);
  k.bind(1);
  tile_ranges.bind(3);
  stats.bind(7);
  // The keys' scales (n_k) when asked, else a stand-in the shader never reads. A buffer update by the GL (not a
  // shader store) is seen by later dispatches without a barrier.
  if (request.key_scale)
    tile_key_scale.upload(request.key_scale->data(), static_cast<std::size_t>(n_k) * sizeof(float));
  else
    tile_key_scale.ensure(16);
  tile_key_scale.bind(5);
  program.set("u_key_scaled", request.key_scale != nullptr);
  program.set("u_n_q", static_cast<unsigned>(n_q));
  program.set("u_n_k", static_cast<unsigned>(n_k));
  program.set("u_ld", sum_dk);
  program.set("u_head", static_cast<unsigned>(request.head));
  program.set("u_k_col", k_col[h]);
  program.set("u_d_k", static_cast<unsigned>(shape.d_k[h]));
  program.set("u_scale", head_scales[h]);
  program.set("u_row0", static_cast<unsigned>(row0));
  program.set("u_col0", static_cast<unsigned>(col0));
  program.set("u_out_rows", static_cast<unsigned>(out_rows));
  program.set("u_out_cols", static_cast<unsigned>(out_cols));
  program.set("u_max_pool", request.pooling == Pooling::Max);
  program.set("u_y0", static_cast<unsigned>(y0));
  program.set("u_band_rows", static_cast<unsigned>(band_rows));
  // b_acc holds the band's cells only: (band_rows, out_cols).
  const std::size_t cells = static_cast<std::size_t>(band_rows) * static_cast<std::size_t>(out_cols);
  if (texture) {
    // Stores issued after this barrier wait for earlier accesses (a draw still sampling these texels) to finish.
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    glBindImageTexture(0, texture, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_R32F);
    if (mask_texture) glBindImageTexture(1, mask_texture, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_R8);
    program.set("u_write_mask", mask_texture != 0);
  }
  tile_values.ensure(cells * 4 * sizeof(std::uint32_t));
  tile_values.bind(4);
  // Passes within the loop budget: keys [pass_col0, + pass_cols) and rows [pass_row0, + pass_rows) of every
  // block per dispatch; per row, the q load and pass_cols dot products of d_k.
  std::size_t block_rows = 1, block_cols = 1;
  for (int y = y0; y < y1; ++y) block_rows = std::max<std::size_t>(block_rows, ranges[2 * y + 1] - ranges[2 * y]);
  for (int x = out_rows; x < out_rows + out_cols; ++x)
    block_cols = std::max<std::size_t>(block_cols, ranges[2 * x + 1] - ranges[2 * x]);
  const std::size_t d_k = static_cast<std::size_t>(shape.d_k[h]), width = flashWidth();
  const std::size_t pass_cols = std::clamp<std::size_t>(kLoopBudget / 2 / (1 + d_k), 1, block_cols);
  const std::size_t pass_rows =
      std::clamp<std::size_t>(kLoopBudget / (1 + width + pass_cols * (1 + d_k)), 1, block_rows);
  {
    const gpu::StageTimer::Scope timed = timer.scope("tile");
    program.set("u_pass_rows", static_cast<unsigned>(pass_rows));
    program.set("u_pass_cols", static_cast<unsigned>(pass_cols));
    for (std::size_t r = 0; r < block_rows; r += pass_rows)
      for (std::size_t c = 0; c < block_cols; c += pass_cols) {
        program.set("u_pass_row0", static_cast<unsigned>(r));
        program.set("u_pass_col0", static_cast<unsigned>(c));
        program.set("u_first_pass", r == 0 && c == 0);
        program.set("u_last_pass", r + pass_rows >= block_rows && c + pass_cols >= block_cols);
        glDispatchCompute(groupsFor(static_cast<std::size_t>(out_cols), kTileSide),
                          groupsFor(static_cast<std::size_t>(band_rows), kTileSide), 1);
        glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);  // the next pass reads each cell's (sum, peak, count)
      }
  }
  if (texture) {
    // A draw samples it next (texture fetch); a later image store or glTexSubImage must see it too.
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
    glBindImageTexture(0, 0, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_R32F);
    glBindImageTexture(1, 0, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_R8);
    gpu::checkGl("writing a tile into a texture");
    return;
  }
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);    // glGetBufferSubData reads what the dispatch wrote
  std::vector<std::uint32_t> cells_out(cells * 4);  // per cell: bits of the value, 0, 0, masked
  tile_values.download(cells_out.data(), cells_out.size() * sizeof(std::uint32_t));
  // Other rows of a band's tile are left as they were (a shape change resizes, as maxPooledRows does).
  if (tile->values.rows() != out_rows || tile->values.cols() != out_cols) tile->values.resize(out_rows, out_cols);
  if (tile->masked.rows() != out_rows || tile->masked.cols() != out_cols) tile->masked.resize(out_rows, out_cols);
  const std::size_t first = static_cast<std::size_t>(y0) * static_cast<std::size_t>(out_cols);
  for (std::size_t c = 0; c < cells; ++c) {  // row-major on the GPU and in Matrix (types.h)
    std::memcpy(tile->values.data() + first + c, &cells_out[4 * c], sizeof(float));
    tile->masked.data()[first + c] = static_cast<std::uint8_t>(cells_out[4 * c + 3]);
  }
  gpu::checkGl("reading a tile back");
}

}  // namespace attnscope
