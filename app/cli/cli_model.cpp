// attnscope model: a checkpoint folder (GPT-2, Llama, Mistral, Qwen2, Qwen3) on the user's text: every layer's per-head maps and the rollout
// as JSON/NPY, the layers x heads grid and the rollout as PNG/SVG, and one layer as a scene file.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/analysis/value_norms.h"
#include "attnscope/atomic_file.h"
#include "attnscope/error.h"
#include "attnscope/model/families.h"
#include "attnscope/model/head_finding.h"
#include "attnscope/model/model.h"
#include "attnscope/model/model_export.h"
#include "attnscope/model/patching.h"
#include "attnscope/scene/scene_json.h"
#include "attnscope/text_bounds.h"
#include "backend_choice.h"
#include "cli/cli.h"

namespace attnscope::cli {

namespace {

constexpr const char* kModelHelp =
    "usage: attnscope model DIR (--text TEXT | --text-file FILE | --repeated-random L [--seed S]) [--layer L]\n"
    "                       [--out OUT.json|OUT.npy [--weighting weight|value-norm]] [--scene-out LAYER.json]\n"
    "                       [--grid-out GRID.png|.svg]\n"
    "                       [--rollout-out ROLLOUT.png|.svg] [--analysis-out A.json [--dla-position P]\n"
    "                       [--dla-target ID]] [--backend cpu|gpu|auto] [--contrast fixed|shared|head|row]\n"
    "                       [--log] [--dpi N] [--width IN] [--height IN] [--font-size PT]\n"
    "                       [--patch-out P.json --metric logit-diff:A,B|logprob:T|loss [--position P]\n"
    "                        [--corrupt TEXT [--patch-direction denoise|noise]]\n"
    "                        [--ablate zero|mean [--reference TEXT]]]\n"
    "  DIR             a checkpoint folder, its family from config.json's model_type: GPT-2 (config.json,\n"
    "                  model.safetensors, vocab.json, merges.txt), or llama, mistral, qwen2, qwen3, gpt_neox,\n"
    "                  phi3, olmo2, mixtral (config.json,\n"
    "                  model.safetensors or model.safetensors.index.json and its shards, tokenizer.json);\n"
    "                  weights in F32, F16 or BF16\n"
    "                  (gemma, gemma2, gemma3_text and gemma3 as the Llama family's files; Gemma 2's\n"
    "                  soft-capped maps are always kept and its layers do not open as scenes)\n"
    "  --text          the text to run (the checkpoint's tokenizer, BOS as it adds it; at most n_positions or\n"
    "                  max_position_embeddings tokens)\n"
    "  --repeated-random L\n"
    "                  instead of a text: L token ids drawn from the tokenizer's vocabulary (seeded by\n"
    "                  --seed, default 0; the same ids on every machine), then the same L again; induction\n"
    "                  heads show on it\n"
    "  --layer L       one layer, counted from 1 as everywhere in attnscope (layer 1 is the checkpoint's h.0;\n"
    "                  default: every layer)\n"
    "  --out           every map with the tokens as JSON ((layers, heads, n, n), each head's key/value head\n"
    "                  and the rollout), or NPY\n"
    "                  float32 (layers, heads, n, n), (heads, n, n) with --layer\n"
    "  --weighting     what --out's maps hold: weight (default: alpha_ij), or value-norm (Kobayashi et al.\n"
    "                  2020: alpha_ij times ||(x_j W_V + b_V) W_O^h||, the norm of what head h writes for key j\n"
    "                  before any norm after attention; the JSON's rollout stays the weights')\n"
    "  --scene-out     layer L as an attnscope scene (needs --layer; every family): the layer's normed input\n"
    "                  rows (ln_1 / input_layernorm), the heads' projections; Llama-family layers add their\n"
    "                  kv_heads, rope (with scaling), Qwen3's q_norm/k_norm and sliding window\n"
    "  --grid-out      the layers x heads grid of heatmaps (or layer L's heads) as PNG or SVG\n"
    "  --rollout-out   the attention rollout (Abnar and Zuidema, 2020) as PNG or SVG\n"
    "  --analysis-out  finding heads across the model, as JSON: head_scores (each head-type score ->\n"
    "                  [layer][head], null where undefined) and composition (q, k, v -> [layer][head][layer]\n"
    "                  [head], Elhage et al. 2021, 0 unless the second layer is later) and dla (direct logit\n"
    "                  attribution: each head's, MLP's and the embedding's share of one logit, the final norm's\n"
    "                  scale frozen; position, target, logit, heads -> [layer][head], and the other parts)\n"
    "  --dla-position  the token whose prediction is attributed, from 0 (default: the last)\n"
    "  --dla-target    the token id whose logit is attributed (default: the top prediction there)\n"
    "  --patch-out     which heads matter, causally (docs/models.md), as JSON: the metric after each\n"
    "                  head's output is ablated (--ablate, on the text) or patched between the text and\n"
    "                  --corrupt: heads -> [layer][head], layers (all heads of a layer at once: its\n"
    "                  attention), mlp (each layer's MLP output), and with\n"
    "                  --corrupt the residual stream -> [layer][position], each also normalised as\n"
    "                  (patched - corrupt) / (clean - corrupt); every intervention reruns from its layer on\n"
    "  --metric        logit-diff:A,B (logit of A minus logit of B), logprob:T (log-probability of T), at\n"
    "                  --position (default: the last token), or loss (mean next-token loss over the text,\n"
    "                  or from --position on);\n"
    "                  A, B, T token ids or texts of one token (\" Mary\"); an encoder's\n"
    "                  through its masked-LM head, its loss each position's own token's (a [MASK]: logprob:T)\n"
    "  --corrupt       the corrupted text, as many tokens as --text (activation patching)\n"
    "  --patch-direction\n"
    "                  denoise (default: the corrupt run with one clean activation patched in) or noise\n"
    "                  (the clean run with one corrupt activation)\n"
    "  --ablate        zero (default) or mean (each head's output averaged over the positions): without\n"
    "                  --corrupt, each head ablated on the text\n"
    "  --reference     with --ablate mean: the means over this text's positions instead of the text's own\n"
    "  --backend       who computes the forward: cpu (default; the forward's own fused loop), gpu (the whole\n"
    "                  forward on the GPU, weights held as stored, each layer checked against the CPU on\n"
    "                  sampled rows), or auto (the GPU when it starts)\n";

// A text file is refused past this before it is read: n_positions tokens (1024 for GPT-2) of the longest
// token's bytes is far less, and encode() refuses by that exact bound once the tokenizer is loaded.
constexpr std::size_t kMaxTextFileBytes = std::size_t{16} << 20;

std::string extension(const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  return dot == std::string::npos ? "" : path.substr(dot + 1);
}

}  // namespace

int runModel(Args& args) {
  if (args.takeFlag("--help") || args.takeFlag("-h")) {
    std::fputs(kModelHelp, stdout);
    std::fputs(contrastHelp(18).c_str(), stdout);
    std::fputs(dpiHelp(18).c_str(), stdout);
    std::fputs(figureSizeHelp(18).c_str(), stdout);
    std::fputs("                  (--grid-out and --rollout-out)\n", stdout);
    return 0;
  }
  std::optional<std::string> text = args.take("--text");
  const std::optional<std::string> text_file = args.take("--text-file");
  // Layers are counted from 1 on the command line, as in the window and every figure; `layer` is the
  // checkpoint's own index (h.0 is layer 1), -1 for every layer.
  const long layer = args.takeInt("--layer", 0, 1, 1000) - 1;
  const std::optional<std::string> out = args.take("--out", "-o");
  const std::optional<std::string> scene_out = args.take("--scene-out");
  const std::optional<std::string> grid_out = args.take("--grid-out");
  const std::optional<std::string> rollout_out = args.take("--rollout-out");
  const std::optional<std::string> analysis_out = args.take("--analysis-out");
  const long repeated = args.takeInt("--repeated-random", 0, 1, 1 << 20);
  const long seed = args.takeInt("--seed", 0, 0, 2147483647);
  const long dla_position = args.takeInt("--dla-position", -1, 0, 1 << 30);
  const long dla_target = args.takeInt("--dla-target", -1, 0, 1 << 30);
  if ((dla_position >= 0 || dla_target >= 0) && !analysis_out)
    throw InputError(dla_position >= 0 ? "--dla-position" : "--dla-target", "--analysis-out to write it to", "none");
  const std::optional<std::string> patch_out = args.take("--patch-out");
  const std::optional<std::string> metric_text = args.take("--metric");
  const std::optional<std::string> corrupt = args.take("--corrupt");
  const std::optional<std::string> direction = args.take("--patch-direction");
  const std::optional<std::string> ablate = args.take("--ablate");
  const std::optional<std::string> reference = args.take("--reference");
  const long metric_position = args.takeInt("--position", -1, 0, 1 << 30);
  if (patch_out && !metric_text) throw InputError("--metric", "the metric --patch-out measures", "none");
  for (const auto& [flag, given] : {std::pair{"--metric", metric_text.has_value()},
                                    std::pair{"--corrupt", corrupt.has_value()},
                                    std::pair{"--patch-direction", direction.has_value()},
                                    std::pair{"--ablate", ablate.has_value()},
                                    std::pair{"--position", metric_position >= 0}})
    if (given && !patch_out) throw InputError(flag, "--patch-out to write the maps to", "none");
  if (direction && *direction != "denoise" && *direction != "noise")
    throw InputError("--patch-direction", "denoise or noise", quoteFragment(*direction, 40));
  if (direction && !corrupt) throw InputError("--patch-direction", "--corrupt to patch from", "none");
  if (ablate && *ablate != "zero" && *ablate != "mean")
    throw InputError("--ablate", "zero or mean", quoteFragment(*ablate, 40));
  if (ablate && corrupt) throw InputError("--ablate", "either --ablate or --corrupt", "both");
  if (reference && (!ablate || *ablate != "mean")) throw InputError("--reference", "--ablate mean to take means from it", "none");
  const std::string backend_name = args.takeChoice("--backend", {"cpu", "gpu", "auto"}, "cpu");
  const MapContrast contrast = takeContrast(args);
  const int dpi = takeDpi(args);
  const FigureSize figure_size = takeFigureSize(args);
  const bool value_norm = args.takeChoice("--weighting", {"weight", "value-norm"}, "weight") == "value-norm";
  if (value_norm && !out) throw InputError("--weighting", "--out to write the weighted maps to", "none");
  const std::vector<std::string> dirs = args.positionals(1);
  if (dirs.empty()) throw InputError("model", "a checkpoint folder: attnscope model DIR --text ...", "none");
  if (contrast != MapContrast{} && !grid_out && !rollout_out)
    throw InputError(contrast.scale != ColorScale::Fixed ? "--contrast" : "--log", "--grid-out or --rollout-out to colour",
                     "neither");
  if (figure_size != FigureSize{} && !grid_out && !rollout_out)
    throw InputError(figureSizeOption(figure_size), "--grid-out or --rollout-out to size", "neither");
  if (text && text_file) throw InputError("--text", "either --text or --text-file", "both");
  if (repeated > 0 && (text || text_file))
    throw InputError("--repeated-random", "either a text or --repeated-random", "both");
  if (text_file) text = readWholeFile(*text_file, "--text-file", kMaxTextFileBytes);
  if (!text && repeated == 0) throw InputError("--text", "the text to run", "nothing (see attnscope model --help)");
  if (scene_out && layer < 0) throw InputError("--layer", "a layer for --scene-out", "nothing");
  // Formats checked before the model is loaded, so a typo costs nothing.
  if (out && extension(*out) != "json" && extension(*out) != "npy")
    throw InputError("--out", "a path ending in .json or .npy", quoteFragment(*out, 200));
  const ExportFormat grid_format = grid_out ? model::figureFormat("--grid-out", *grid_out) : ExportFormat::Png;
  const ExportFormat rollout_format = rollout_out ? model::figureFormat("--rollout-out", *rollout_out) : ExportFormat::Png;
  // Every output either written or none: each path gets its temporary file now (a path that cannot be written
  // fails before any work), and all are renamed together at the end. An error on the way removes them all.
  std::vector<PendingFile> files;
  files.reserve(6);
  PendingFile* out_file = out ? &files.emplace_back(*out) : nullptr;
  PendingFile* scene_file = scene_out ? &files.emplace_back(*scene_out) : nullptr;
  PendingFile* grid_file = grid_out ? &files.emplace_back(*grid_out) : nullptr;
  PendingFile* rollout_file = rollout_out ? &files.emplace_back(*rollout_out) : nullptr;
  PendingFile* analysis_file = analysis_out ? &files.emplace_back(*analysis_out) : nullptr;
  PendingFile* patch_file = patch_out ? &files.emplace_back(*patch_out) : nullptr;

  const model::Model checkpoint = model::loadModel(dirs[0]);
  checkPendingOutputs();  // no output is a file of the checkpoint (tokenizer.json, say): refused before the forward
  const model::HeadLayout config = checkpoint.layout();
  if (layer >= config.n_layer)
    throw InputError("--layer", "1 to " + std::to_string(config.n_layer), std::to_string(layer + 1));
  // A scene holds at most Limits::max_heads heads (validateScene): a wider layer is refused now, by the flag
  // that asked for it, not after the forward as the scene's own "heads" field.
  if (scene_out && config.n_head > Limits{}.max_heads)
    throw InputError("--scene-out", "a layer of at most " + std::to_string(Limits{}.max_heads) +
                                        " heads (a scene's limit; --grid-out and --out take any)",
                     std::to_string(config.n_head) + " heads in layer " + std::to_string(layer + 1));
  const std::vector<int> ids =
      repeated > 0 ? model::repeatedRandomTokens(
                         // ids the tokenizer names (a config's vocab_size may pad past them; a vocabulary may skip)
                         model::tokenizerIds(checkpoint.tokenizer, checkpoint.architecture().vocab_size),
                         static_cast<int>(repeated), static_cast<std::uint64_t>(seed), checkpoint.maxTokens())
                   : checkpoint.tokenizer.encodeAtMost(*text, static_cast<std::size_t>(checkpoint.maxTokens()));
  if (ids.empty()) throw InputError("--text", "at least one token", "an empty text");
  if (repeated > 0)  // what the outputs name as the text
    text = "(" + std::to_string(repeated) + " random tokens, seed " + std::to_string(seed) + ", repeated)";
  const int trace_position = analysis_out ? static_cast<int>(dla_position >= 0 ? dla_position : static_cast<long>(ids.size()) - 1) : -1;
  if (trace_position >= static_cast<int>(ids.size()))
    throw InputError("--dla-position", "a token from 0 to " + std::to_string(ids.size() - 1),
                     std::to_string(trace_position));
  // Which heads matter: the metric and the corrupt text checked before the forward.
  model::PatchMetric metric;
  std::vector<int> corrupt_ids, reference_ids;
  if (patch_out) {
    if (const std::string why = model::patchRefusal(checkpoint); !why.empty())
      throw InputError("--patch-out", "a decoder", why);
    metric = model::parsePatchMetric(checkpoint, *metric_text);
    metric.position = static_cast<int>(metric_position);
    if (metric_position >= static_cast<long>(ids.size()))
      throw InputError("--position", "a token from 0 to " + std::to_string(ids.size() - 1),
                       std::to_string(metric_position));
    if (corrupt) {
      if (repeated > 0) throw InputError("--corrupt", "a --text to patch against", "--repeated-random");
      corrupt_ids = checkpoint.tokenizer.encodeAtMost(*corrupt, static_cast<std::size_t>(checkpoint.maxTokens()));
      if (corrupt_ids.size() != ids.size())
        throw InputError("--corrupt", std::to_string(ids.size()) + " tokens (as many as --text)",
                         std::to_string(corrupt_ids.size()) + " tokens");
    }
    if (reference) {
      reference_ids = checkpoint.tokenizer.encodeAtMost(*reference, static_cast<std::size_t>(checkpoint.maxTokens()));
      if (reference_ids.empty()) throw InputError("--reference", "a text of at least one token", "none");
    }
  }
  if (analysis_out) checkMemoryBudget("composition", "the composition of every pair of heads",
                                      model::compositionBytes(checkpoint));
  const bool npy = out && extension(*out) == "npy";
  if (out)
    checkOutputBudget("--out", model::modelResultBytes(config, static_cast<int>(ids.size()), static_cast<int>(layer),
                                                       npy, text->size()));
  std::vector<std::string> labels;
  for (int id : ids) labels.push_back(checkpoint.tokenizer.label(id));
  // cpu: the forward's own fused loop; gpu (auto, where a context starts): the whole forward on the GPU, each
  // layer checked against the CPU on sampled rows as it runs.
  std::vector<std::string> warnings;
  const std::unique_ptr<GpuForward> gpu = makeGpuForward(backend_name, checkpoint.weights, warnings);
  const model::ForwardOptions forward_options{
      .keep_ln1 = scene_out.has_value() || analysis_out.has_value() || value_norm, .trace_position = trace_position};
  const model::ForwardResult forward =
      gpu ? gpu->forward(ids, forward_options) : model::modelForward(checkpoint, ids, forward_options);
  // A layer whose GPU result failed its run-time check: the forward was recomputed on the CPU, said here.
  if (gpu) warnings.insert(warnings.end(), gpu->warnings().begin(), gpu->warnings().end());
  for (const std::string& w : warnings) std::fprintf(stderr, "attnscope: warning: %s\n", w.c_str());
  // The rollout reads every layer's maps (recomputed, one at a time, when the forward kept none): only when
  // an output holds it, --rollout-out or the JSON --out.
  const Matrix rollout =
      rollout_out || (out && !npy) ? model::attentionRollout(forward, config) : Matrix();

  // Value-norm weighting: every layer's (heads, n) norms, O(layers heads n) floats beside the maps.
  model::KeyScales value_norms;
  if (value_norm)
    for (int l = 0; l < config.n_layer; ++l)
      value_norms.push_back(layer < 0 || l == layer
                                ? float32ValueNorms(model::valueNormsDouble(checkpoint, forward, l),
                                                    "layer " + std::to_string(l + 1) + ", ")
                                : Matrix());
  const model::KeyScales* scales = value_norm ? &value_norms : nullptr;
  // Each output streams into its temporary file; the maps never become text in memory.
  if (out_file) {
    const auto sink = [&](std::string_view bytes) { out_file->write(bytes); };
    if (npy) {
      model::writeModelResultNpy(forward, config, static_cast<int>(layer), sink, scales);
    } else {
      JsonMatrices matrices;
      const nlohmann::ordered_json j =
          model::modelResultJson(checkpoint, *text, ids, forward, rollout, static_cast<int>(layer), &matrices, scales);
      formatJsonTo(j, matrices, sink);
    }
  }
  const std::string family = model::familyDisplayName(checkpoint.model_type);  // names the figures too
  if (scene_file) {
    const std::string description = family + " checkpoint " + checkpoint.dir + ", layer " + std::to_string(layer + 1) +
                                    " of " + std::to_string(config.n_layer) + ", text: \"" + elideLabel(*text, 200) +
                                    "\"";
    const int l = static_cast<int>(layer);
    const Scene scene = model::modelLayerScene(checkpoint, forward, l, labels, description);
    validateScene(scene);
    scene_file->write(formatJson(sceneToJson(scene)));
  }
  if (grid_file) {
    Figure grid =
        model::modelGridFigure(forward, config, labels, static_cast<int>(layer), contrast, family, nullptr, figure_size);
    grid.dpi = dpi;
    grid_file->write(model::figureBytes(grid, grid_format));
  }
  if (rollout_file) {
    Figure rollout_figure = model::rolloutFigure(rollout, labels, checkpoint.layout().causal, contrast, family);
    rollout_figure.dpi = dpi;
    rollout_figure.size = figure_size;
    rollout_file->write(model::figureBytes(rollout_figure, rollout_format));
  }
  if (analysis_file) {
    nlohmann::ordered_json j;
    j["model"] = checkpoint.dir;
    j["model_type"] = checkpoint.model_type;
    j["token_ids"] = ids;
    j["local_window"] = kDefaultLocalWindow;
    j["head_scores"] = model::headScoresJson(model::modelHeadScores(forward, ids));
    j["composition"] = model::compositionJson(model::compositionScores(checkpoint));
    // An encoder (post-norm, no unembedding read) has no direct logit attribution: null.
    j["dla"] = checkpoint.architecture().residual == model::Residual::PostNorm
                   ? nlohmann::ordered_json(nullptr)
                   : model::logitAttributionJson(
                         model::logitAttribution(checkpoint, forward, trace_position, static_cast<int>(dla_target)));
    // The checkpoint folder's name may be any bytes: invalid UTF-8 is written as U+FFFD (as formatJson does).
    analysis_file->write(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  }
  if (patch_file) {
    // Progress on standard error, a line every tenth of the interventions.
    model::PatchOptions options;
    options.reference = reference_ids;
    options.progress = [](int done, int total) {
      if (done == total || done % std::max(1, total / 10) == 0)
        std::fprintf(stderr, "attnscope: patching %d/%d\n", done, total);
      return true;
    };
    const model::PatchMaps maps =
        corrupt ? model::patchActivations(checkpoint, ids, corrupt_ids, metric, !direction || *direction == "denoise",
                                          options)
                : model::ablateHeads(checkpoint, ids, metric,
                                     ablate && *ablate == "mean" ? model::Ablation::Mean : model::Ablation::Zero, options);
    nlohmann::ordered_json j = model::patchMapsJson(maps, labels);
    j["model"] = checkpoint.dir;
    j["token_ids"] = ids;
    if (corrupt) j["corrupt_token_ids"] = corrupt_ids;
    if (reference) j["reference_token_ids"] = reference_ids;
    patch_file->write(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  }
  commitAll(files);

  // The token list elided: one line, whatever the text holds.
  if (config.n_kv_head == config.n_head)
    std::printf("%d layers x %d heads, %zu tokens:", config.n_layer, config.n_head, ids.size());
  else  // grouped-query attention: say how the query heads share key/value heads
    std::printf("%d layers x %d heads (%d key/value heads, %d query heads each), %zu tokens:", config.n_layer,
                config.n_head, config.n_kv_head, config.n_head / config.n_kv_head, ids.size());
  constexpr std::size_t kListedTokens = 64;
  for (std::size_t i = 0; i < labels.size() && i < kListedTokens; ++i)
    std::printf(" [%s]", terminalLabel(labels[i]).c_str());
  if (labels.size() > kListedTokens) std::printf(" ... (%zu more)", labels.size() - kListedTokens);
  std::printf("\n");
  for (const PendingFile& file : files) std::printf("wrote %s\n", printableLine(file.path(), 400).c_str());
  return 0;
}

}  // namespace attnscope::cli
