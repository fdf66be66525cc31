// Issue 29's array and settings reproductions, run as a user would: .npy/.npz/safetensors shapes whose size
// products wrap 64 bits, a tensor of 30,000 heads in 480 KB, a chosen tensor beside an int64 one or a NaN in
// another, JSON followed by a NUL and garbage, environment settings read loosely, and --threads past what can
// start. Hostile files are written here byte by byte (or by NumPy). Each refusal: exit 2 (never a crash), one line
// naming the file or variable and what was wrong, never std::bad_alloc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "attnscope/arrays/attention_tensor.h"
#include "attnscope/arrays/user_layer.h"
#include "attnscope/error.h"
#include "attnscope/json_file.h"
#include "attnscope/settings.h"
#include "cli/import_view_support.h"

using namespace attnscope;

namespace {

void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A version 1.0 .npy of `descr` with the shape tuple written as given (any text) and `data` after the header.
std::string npy(const std::string& shape, const std::string& data, const std::string& descr = "<f4") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string floats(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// Exit 2 and one bounded line holding every needle; never a crash (status -1) nor std::bad_alloc.
void expectOneLine(const test::CommandRun& r, const std::vector<std::string>& needles, const std::string& what) {
  EXPECT_EQ(r.status, 2) << what << ": " << r.err.substr(0, 400);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err.substr(0, 400);
  EXPECT_LT(r.err.size(), 700u) << what;
  EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << what << ": " << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << what << ": '" << n << "' in " << r.err;
}

const std::string kTokens2 = "--tokens '[\"a\",\"b\"]'";

// attnscope with `env` ("NAME=value ...", quoted for the shell) before it.
test::CommandRun cli(const std::string& env, const std::string& args) {
  return test::run(env + " '" + ATTNSCOPE_BINARY + "' " + args);
}

// A safetensors file of F32 and I64 tensors: name -> (dtype, shape, raw little-endian bytes).
struct RawTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};
void writeRawSafetensors(const std::string& path, const std::map<std::string, RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  const std::string text = header.dump();
  std::string out(8, '\0');
  const std::uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);
  spit(path, out + text + data);
}

std::string int64s(std::vector<std::int64_t> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(std::int64_t));
}

}  // namespace

// Issue 29 item 7: every product of sizes is checked, before anything is allocated, in every reader.
TEST(ArraysHostileCli, ShapesWhoseProductsWrapAreRefusedNamingFileAndShape) {
  const std::string dir = test::tempDir("arrays_wrap");
  struct Case {
    std::string name, shape, data, says;
  };
  const std::vector<Case> cases = {
      // 3 x 6148914691236517206 = 2^64 + 2: wrapped, 2 x 64 x 64 values matched 32 KB of data (a SIGSEGV).
      {"wrap3", "(3, 6148914691236517206, 64, 64)", std::string(32768, '\0'), "sizes from 0 to 2147483647 each"},
      // 4 x (2^62 + 1) = 2^64 + 4: wrapped to 4, read as 4 layers of one head.
      {"wrap4", "(4, 4611686018427387905, 1, 1)", floats({1, 1, 1, 1}), "sizes from 0 to 2147483647 each"},
      {"huge2", "(2147483648, 8589934592, 1, 1)", "", "sizes from 0 to 2147483647 each"},  // was about --layer
      {"huge3", "(3, 6100000000000000000, 1, 1)", floats({1, 1, 1}), "sizes from 0 to 2147483647 each"},  // bad_alloc
      // Each size allowed, their product 2^64 (zero when wrapped: 0 bytes of data would have matched).
      {"wrap_zero", "(65536, 65536, 65536, 65536)", "", "at most 2147483647 values"},
      {"int_max", "(2147483647, 2147483647, 2, 2)", floats({1, 1, 1, 1}), "at most 2147483647 values"},
      {"zero_huge", "(0, 4611686018427387904, 2)", "", "sizes from 0 to 2147483647 each"},
      {"negative", "(-1, 2, 2)", "", "a shape of non-negative integers"},
      {"past_int64", "(99999999999999999999, 1, 1)", "", "a shape of non-negative integers"},
      // Sizes that fit, data that does not: 1 x 2 x 2 float32 is 16 bytes.
      {"short", "(1, 2, 2)", floats({1, 0, 0}), "16 data bytes for shape (1, 2, 2), got 12 (truncated)"},
      {"long", "(1, 2, 2)", floats({1, 0, 0, 1, 0}), "16 data bytes for shape (1, 2, 2), got 20"},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name + ".npy";
    spit(path, npy(c.shape, c.data));
    std::vector<std::string> needles = {c.name + ".npy", c.says};
    if (c.name != "negative" && c.name != "past_int64") needles.push_back("shape " + c.shape);
    const test::CommandRun r = test::runAttnscope("view '" + path + "' " + kTokens2);
    expectOneLine(r, needles, "view " + c.shape);
    EXPECT_EQ(r.err.find("--layer"), std::string::npos) << r.err;
    expectOneLine(test::runAttnscope("import '" + path + "' --layout torch-mha --heads 1 --tokens a,b --scene-out '" +
                                     dir + "/s.json'"),
                  needles, "import " + c.shape);
  }

  // The same inside a .npz (Python's zipfile, stored entries as np.savez writes them), beside a good entry.
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("zipfile");
  spit(dir + "/wrap.npy", npy("(3, 6148914691236517206, 64, 64)", std::string(32768, '\0')));
  spit(dir + "/good.npy", npy("(1, 2, 2)", floats({1, 0, 0.5f, 0.5f})));
  ASSERT_EQ(test::run("cd '" + dir + "' && /usr/bin/python3 -c \"import zipfile\n"
                      "z = zipfile.ZipFile('wrap.npz', 'w', zipfile.ZIP_STORED)\n"
                      "z.write('good.npy', 'attn.npy'); z.write('wrap.npy', 'w.npy'); z.close()\"")
                .status,
            0);
  expectOneLine(test::runAttnscope("view '" + dir + "/wrap.npz' --tensor attn " + kTokens2),
                {"wrap.npz: 'w.npy'", "shape (3, 6148914691236517206, 64, 64)"}, "npz entry");
  expectOneLine(test::runAttnscope("import '" + dir + "/wrap.npz' --layout torch-mha --heads 1 --tokens a,b --scene-out '" +
                                   dir + "/s.json'"),
                {"wrap.npz: 'w.npy'", "shape (3, 6148914691236517206, 64, 64)"}, "npz entry, import");
  EXPECT_FALSE(std::ifstream(dir + "/s.json").good());

  // A safetensors header with the same shape: refused by the header's own checks, naming the tensor.
  const std::string header = R"({"w":{"dtype":"F32","shape":[3,6148914691236517206,64,64],"data_offsets":[0,32768]}})";
  std::string st(8, '\0');
  const std::uint64_t length = header.size();
  std::memcpy(st.data(), &length, 8);
  spit(dir + "/wrap.safetensors", st + header + std::string(32768, '\0'));
  expectOneLine(test::runAttnscope("view '" + dir + "/wrap.safetensors' " + kTokens2), {"wrap.safetensors", "'w'", "shape"},
                "safetensors");
}

// Issue 29 item 8: view and import estimate what they hold and write, and refuse under the budget first.
TEST(ArraysHostileCli, ViewAndImportRefuseBeyondTheBudgetBeforeWorking) {
  const std::string dir = test::tempDir("arrays_budget");
  // 30,000 heads of 2 x 2, each row (1, 0): 480 KB of file. The similarity alone is 2 x 30,000^2 numbers in the
  // JSON (1.8e9 x 17 bytes, 30 GB of text): far past a 4 GiB budget. It took 18 s and 7.3 GB before bad_alloc.
  std::vector<float> w;
  for (int h = 0; h < 30000; ++h) w.insert(w.end(), {1, 0, 1, 0});
  spit(dir + "/heads.npy", npy("(30000, 2, 2)", floats(w)));
  for (const std::string& out : {"-o '" + dir + "/o.json'", std::string(), "--grid-out '" + dir + "/g.png'"})
    expectOneLine(cli("ATTNSCOPE_MEMORY_BUDGET=4G", "view '" + dir + "/heads.npy' " + kTokens2 + " " + out),
                  {"heads.npy", "within the memory budget of 4096.0 MiB"}, "30,000 heads " + out);
  // Also with no budget set (half of this machine's memory: 30 GB of JSON is past it on any machine we run on).
  expectOneLine(test::runAttnscope("view '" + dir + "/heads.npy' " + kTokens2 + " -o '" + dir + "/o.json'"),
                {"heads.npy", "memory budget"}, "30,000 heads, default budget");
  EXPECT_FALSE(std::ifstream(dir + "/o.json").good());

  // 300 heads fit a 64 MiB budget for the JSON; their grid figure, 300 maps in one row, does not fit 1 MiB
  // more than the JSON's estimate. The JSON alone: 2 x 300^2 x 33 bytes ~ 5.9 MB.
  std::vector<float> small(w.begin(), w.begin() + 300 * 4);
  spit(dir + "/small.npy", npy("(300, 2, 2)", floats(small)));
  const test::CommandRun fits = cli("ATTNSCOPE_MEMORY_BUDGET=64M", "view '" + dir + "/small.npy' " + kTokens2 + " -o '" + dir + "/s.json'");
  EXPECT_EQ(fits.status, 0) << fits.err;
  expectOneLine(cli("ATTNSCOPE_MEMORY_BUDGET=1M", "view '" + dir + "/small.npy' " + kTokens2 + " -o '" + dir + "/s2.json'"),
                {"small.npy", "memory budget of 1.0 MiB"}, "300 heads under 1 MiB");
  EXPECT_FALSE(std::ifstream(dir + "/s2.json").good());

  // import: a torch-mha state dict (E = 4, 6 rows of x) is 28 + 96 floats... within 1 KiB it is not.
  std::vector<float> in_proj(48, 0.0f), x(24, 0.5f);
  for (int i = 0; i < 12; ++i) in_proj[static_cast<std::size_t>(i * 4 + i % 4)] = 1.0f;
  test::writeSafetensors(dir + "/layer.safetensors", {{"in_proj_weight", {{12, 4}, in_proj}},
                                                      {"out_proj.weight", {{4, 4}, std::vector<float>(16, 0.25f)}},
                                                      {"x", {{6, 4}, x}}});
  const std::string import = "import '" + dir + "/layer.safetensors' --layout torch-mha --heads 2 --tokens a,b,c,d,e,f "
                             "--scene-out '" + dir + "/layer.json'";
  expectOneLine(cli("ATTNSCOPE_MEMORY_BUDGET=1K", import), {"layer.safetensors", "memory budget of 1024 bytes"}, "import 1K");
  EXPECT_FALSE(std::ifstream(dir + "/layer.json").good());
  const test::CommandRun imported = cli("ATTNSCOPE_MEMORY_BUDGET=1M", import);
  EXPECT_EQ(imported.status, 0) << imported.err;
}

// Issue 29 item 9: only the chosen tensor (or the layout's keys) is validated; the others are listed.
TEST(ArraysHostileCli, OnlyWhatIsUsedIsValidated) {
  const std::string dir = test::tempDir("arrays_chosen");
  const std::string attn = floats({1, 0, 0.25f, 0.75f});
  writeRawSafetensors(dir + "/f.safetensors", {{"attn", {"F32", {1, 1, 2, 2}, attn}},
                                               {"input_ids", {"I64", {1, 2}, int64s({15496, 995})}},
                                               {"junk", {"F32", {2}, floats({std::nanf(""), 1})}}});
  const test::CommandRun ok = test::runAttnscope("view '" + dir + "/f.safetensors' --tensor attn " + kTokens2);
  ASSERT_EQ(ok.status, 0) << ok.err;
  const nlohmann::json j = nlohmann::json::parse(ok.out);
  // Head 1's rows (1, 0) and (0.25, 0.75): max weight 1; by hand the JSON reports it for layer 1 head 1.
  ASSERT_EQ(j.at("heads").size(), 1u);
  EXPECT_EQ(j.at("heads")[0].at("max_weight").get<double>(), 1.0);
  const std::string listing = "'attn' float32 (1, 1, 2, 2), 'input_ids' int64 (1, 2), 'junk' float32 (2,)";
  expectOneLine(test::runAttnscope("view '" + dir + "/f.safetensors' " + kTokens2), {"--tensor", listing}, "no --tensor");
  expectOneLine(test::runAttnscope("view '" + dir + "/f.safetensors' --tensor nope " + kTokens2), {listing}, "--tensor nope");
  expectOneLine(test::runAttnscope("view '" + dir + "/f.safetensors' --tensor input_ids " + kTokens2),
                {"f.safetensors: 'input_ids': expected a float tensor", "got int64 (I64) of shape (1, 2)"}, "--tensor input_ids");
  expectOneLine(test::runAttnscope("view '" + dir + "/f.safetensors' --tensor junk " + kTokens2),
                {"'junk'", "expected finite values, got NaN at flat index 0"}, "--tensor junk");
  {
    std::map<std::string, arrays::NamedArray> read = arrays::readArrays(dir + "/f.safetensors");
    EXPECT_THROW(arrays::usableValues("junk", read.at("junk")), InputError);
    EXPECT_EQ(read.at("input_ids").shape, (std::vector<std::int64_t>{1, 2}));
    EXPECT_TRUE(read.at("input_ids").data.empty());
    read.erase("junk");  // a float vector would make it a state dict; the int64 ids say nothing either way
    EXPECT_TRUE(arrays::looksLikeAttention(read));
  }

  // The same in a .npz made by NumPy: int64 input_ids, a float64 NaN elsewhere; and a state dict for import.
  ATTNSCOPE_REQUIRE_PYTHON_MODULE("numpy");
  ASSERT_EQ(test::run("cd '" + dir + "' && /usr/bin/python3 -c \"import numpy as np\n"
                      "np.savez('f.npz', attn=np.array([[[[1, 0], [0.25, 0.75]]]], np.float32),\n"
                      "         input_ids=np.array([[15496, 995]]), junk=np.array([np.nan, 1.0]))\n"
                      "w = np.zeros((12, 4), np.float32); w[np.arange(12), np.arange(12) % 4] = 1\n"
                      "np.savez('layer.npz', in_proj_weight=w, **{'out_proj.weight': np.eye(4, dtype=np.float32)},\n"
                      "         x=np.full((2, 4), 0.5, np.float32), step=np.array(7), extra=np.array([np.inf]))\"")
                .status,
            0);
  const test::CommandRun npz = test::runAttnscope("view '" + dir + "/f.npz' --tensor attn " + kTokens2);
  EXPECT_EQ(npz.status, 0) << npz.err;
  expectOneLine(test::runAttnscope("view '" + dir + "/f.npz' --tensor input_ids " + kTokens2), {"f.npz: 'input_ids': expected a float array", "got int64 of shape (1, 2)"}, "npz input_ids");
  expectOneLine(test::runAttnscope("view '" + dir + "/f.npz' " + kTokens2),
                {"'attn' float32 (1, 1, 2, 2), 'input_ids' int64 (1, 2), 'junk' float64 (2,)"}, "npz listing");
  const test::CommandRun layer = test::runAttnscope("import '" + dir + "/layer.npz' --layout torch-mha --heads 2 "
                                                    "--tokens a,b --scene-out '" + dir + "/layer.json'");
  EXPECT_EQ(layer.status, 0) << layer.err;  // 'step' (int64) and 'extra' (inf) are not the layout's keys
  // A key the layout reads is validated: x made int64 is refused naming it.
  ASSERT_EQ(test::run("cd '" + dir + "' && /usr/bin/python3 -c \"import numpy as np\n"
                      "w = np.zeros((12, 4), np.float32)\n"
                      "np.savez('bad.npz', in_proj_weight=w, **{'out_proj.weight': np.eye(4, dtype=np.float32)},\n"
                      "         x=np.ones((2, 4), np.int64))\"")
                .status,
            0);
  expectOneLine(test::runAttnscope("import '" + dir + "/bad.npz' --layout torch-mha --heads 2 --tokens a,b "
                                   "--scene-out '" + dir + "/bad.json'"),
                {"bad.npz: 'x'", "int64"}, "import int64 x");
}

// Issue 29 item 10: only whitespace may follow a JSON value, in every reader (a NUL ended the text early).
TEST(ArraysHostileCli, BytesAfterTheJsonValueAreRefused) {
  const std::string dir = test::tempDir("json_trailing");
  const std::string scene = test::slurp(std::string(ATTNSCOPE_ASSETS_DIR) + "/scenes/worked_example.json");
  ASSERT_FALSE(scene.empty());
  spit(dir + "/ok.json", scene + "\n \t\r\n");
  EXPECT_EQ(test::runAttnscope("compute '" + dir + "/ok.json' -o '" + dir + "/out.json'").status, 0);
  spit(dir + "/nul.json", scene + std::string(1, '\0') + "garbage");
  expectOneLine(test::runAttnscope("compute '" + dir + "/nul.json'"),
                {"nul.json", "nothing after it but whitespace", "a NUL byte at line"}, "scene + NUL");
  spit(dir + "/more.json", scene + " {\"format\": 1}");
  expectOneLine(test::runAttnscope("compute '" + dir + "/more.json'"), {"more.json", "valid JSON"}, "scene + a value");
  spit(dir + "/inner.json", scene.substr(0, 40) + std::string(1, '\0') + scene.substr(40));
  expectOneLine(test::runAttnscope("compute '" + dir + "/inner.json'"), {"inner.json", "a NUL byte at line"}, "NUL inside");
  // A token list file and a tokenizer.json, the other readers of outside JSON.
  spit(dir + "/tokens.json", std::string("[\"a\", \"b\"]") + '\0' + "x");
  spit(dir + "/t.npy", npy("(1, 2, 2)", floats({1, 0, 0, 1})));
  expectOneLine(test::runAttnscope("view '" + dir + "/t.npy' --tokens '" + dir + "/tokens.json'"),
                {"tokens.json", "a NUL byte"}, "token file");
  const std::string tokenizer = test::slurp(std::string(ATTNSCOPE_SOURCE_DIR) + "/tests/fuzz/tokenizer_json_seeds/byte_level.json");
  ASSERT_FALSE(tokenizer.empty());
  spit(dir + "/tokenizer.json", tokenizer);
  EXPECT_EQ(test::runAttnscope("tokenize '" + dir + "/tokenizer.json' --text hi").status, 0);
  spit(dir + "/tokenizer.json", tokenizer + std::string(1, '\0') + "{}");
  expectOneLine(test::runAttnscope("tokenize '" + dir + "/tokenizer.json' --text hi"), {"tokenizer.json", "a NUL byte"},
                "tokenizer.json");
  EXPECT_THROW(parseJsonText(std::string("[1]\0]", 5), "t"), InputError);
  EXPECT_THROW(parseJsonText("[1] x", "t"), InputError);
  EXPECT_EQ(parseJsonText("[1] \n", "t"), nlohmann::json::array({1}));
}

// Issue 29 item 14: a thread count past the cap or the address-space limit is our refusal, not libgomp's crash.
TEST(ArraysHostileCli, ThreadCountsPastWhatCanStartAreRefused) {
  const std::string bench = "bench --n 16 --heads 2 --d-model 8 --repeat 1 ";
  // Under a 4 GiB address-space limit 1024 threads' stacks (8 MiB each by default) cannot all be reserved: it
  // was a SIGSEGV. Refused by the cap (4 x the hardware threads) or, on a machine of 256 cores, by the limit.
  const test::CommandRun r = test::run("ulimit -v 4194304; '" + std::string(ATTNSCOPE_BINARY) + "' " + bench + "--threads 1024");
  expectOneLine(r, {"--threads: expected", "got 1024"}, "--threads 1024");
  const test::CommandRun three = test::run("ulimit -v 4194304; '" + std::string(ATTNSCOPE_BINARY) + "' " + bench + "--threads 3");
  EXPECT_EQ(three.status, 0) << three.err;  // within the cap of at least 4 on every machine
  expectOneLine(test::runAttnscope(bench + "--threads 100000000"), {"--threads: expected 1 to", "got 100000000"}, "1e8");
  expectOneLine(cli("OMP_NUM_THREADS=100000", bench), {"OMP_NUM_THREADS", "got 100000"}, "OMP_NUM_THREADS");
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  expectOneLine(test::runAttnscope(bench + "--threads " + std::to_string(4 * std::max(cores, 1) + 1)),
                {"--threads: expected 1 to " + std::to_string(std::max(4, 4 * cores))}, "cap + 1");
}

// Issue 29 item 15: every setting parsed strictly; the CLI refuses a bad one naming it.
TEST(ArraysHostileCli, SettingsAreParsedStrictly) {
  // By hand: K, M, G, T are 2^10, 2^20, 2^30, 2^40; a fraction rounds down to whole bytes.
  EXPECT_EQ(parseByteCount("V", "4G"), std::size_t{4} << 30);
  EXPECT_EQ(parseByteCount("V", "4GiB"), std::size_t{4} << 30);
  EXPECT_EQ(parseByteCount("V", "4gb"), std::size_t{4} << 30);
  EXPECT_EQ(parseByteCount("V", "512M"), std::size_t{512} << 20);
  EXPECT_EQ(parseByteCount("V", "1.5K"), 1536u);
  EXPECT_EQ(parseByteCount("V", "2T"), std::size_t{2} << 40);
  EXPECT_EQ(parseByteCount("V", "65536"), 65536u);
  EXPECT_EQ(parseByteCount("V", "50B"), 50u);
  EXPECT_EQ(parseByteCount("V", "1024T"), std::size_t{1} << 50);
  for (const char* bad : {"nan", "inf", "-inf", "1e400", "1e3", "4G4", "4 G", " 4G", "4G ", "-1", "+4", "0", "0.4",
                          "4.", ".5", "0x10", "4P", "4Gb4", "4KiBB", "", "2097152T", "99999999999999999999999999"}) {
    try {
      parseByteCount("ATTNSCOPE_MEMORY_BUDGET", bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("ATTNSCOPE_MEMORY_BUDGET: expected ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(parseDecimalSetting("S", "2", 0.5, 4), 2.0);
  EXPECT_EQ(parseDecimalSetting("S", "1.25", 0.5, 4), 1.25);
  for (const char* bad : {"nan", "inf", "5", "0.25", "2x", "2.", "1e0", "-2", ""})
    EXPECT_THROW(parseDecimalSetting("S", bad, 0.5, 4), InputError) << bad;
  EXPECT_TRUE(parseFlagSetting("F", "1"));
  EXPECT_FALSE(parseFlagSetting("F", "0"));
  for (const char* bad : {"yes", "true", "2", "01", " 1"}) EXPECT_THROW(parseFlagSetting("F", bad), InputError) << bad;

  // End to end: each is refused by every command before any work, naming the variable and the text.
  const std::string scene = "compute '" + std::string(ATTNSCOPE_ASSETS_DIR) + "/scenes/worked_example.json'";
  for (const char* bad : {"nan", "inf", "1e400", "4G4", "0", "-4G"})
    expectOneLine(cli(std::string("ATTNSCOPE_MEMORY_BUDGET='") + bad + "'", scene),
                  {"ATTNSCOPE_MEMORY_BUDGET: expected", std::string("'") + bad + "'"}, bad);
  const std::vector<std::pair<std::string, std::string>> others = {
      {"ATTNSCOPE_MAPS_LIMIT", "4G4"}, {"ATTNSCOPE_UI_SCALE", "nan"},     {"ATTNSCOPE_UI_SCALE", "9"},
      {"ATTNSCOPE_TIMINGS", "yes"},    {"ATTNSCOPE_TILE_LOG", "2"},       {"ATTNSCOPE_GPU_AS_HARDWARE", "true"},
      {"ATTNSCOPE_MODEL_MAPS", "dorp"}};
  for (const auto& [name, value] : others)
    expectOneLine(cli(name + "='" + value + "'", scene), {name + ": expected", "'" + value + "'"}, name);
  // Good values, and an empty one (unset), run.
  for (const char* good : {"ATTNSCOPE_MEMORY_BUDGET=4G", "ATTNSCOPE_MEMORY_BUDGET=1.5GiB", "ATTNSCOPE_MEMORY_BUDGET=",
                           "ATTNSCOPE_MAPS_LIMIT=8M ATTNSCOPE_TIMINGS=1 ATTNSCOPE_UI_SCALE=2 ATTNSCOPE_MODEL_MAPS=drop"}) {
    const test::CommandRun r = cli(good, scene);
    EXPECT_EQ(r.status, 0) << good << ": " << r.err;
  }
  // The budget read in the engine: a 300 MiB budget refuses what 4G allows.
  ::setenv("ATTNSCOPE_MEMORY_BUDGET", "300M", 1);
  EXPECT_EQ(defaultMemoryBudget(), std::size_t{300} << 20);
  ::setenv("ATTNSCOPE_MEMORY_BUDGET", "nan", 1);
  EXPECT_THROW(defaultMemoryBudget(), InputError);
  EXPECT_EQ(badSettings().size(), 1u);
  ::unsetenv("ATTNSCOPE_MEMORY_BUDGET");
  EXPECT_TRUE(badSettings().empty() || badSettings().front().find("ATTNSCOPE_MEMORY_BUDGET") == std::string::npos);
}
