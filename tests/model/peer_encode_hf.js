// The peer for tokenizer.json: @lenml/tokenizers (transformers.js's tokenizers) on the test corpora and the
// seed texts, for each family's tokenizer.json + tokenizer_config.json.
// Usage: node peer_encode_hf.js TOKENIZERS_PKG OUT_DIR FAMILY... -- CORPUS_JSON... -- SEEDS_DIR > peer_ids_hf.json
// Output: {family: [{"name", "text", "ids", "ids_no_special", "nfc"}]}, texts as read (UTF-8); "nfc" is the
// text in Unicode NFC (JavaScript's own normalize), for families whose normalizer is NFC.
'use strict';
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const pkg = args[0], outDir = args[1];
const cut1 = args.indexOf('--'), cut2 = args.indexOf('--', cut1 + 1);
const families = args.slice(2, cut1), corpora = args.slice(cut1 + 1, cut2), seedsDir = args[cut2 + 1];
const { TokenizerLoader } = require(path.resolve(pkg, 'dist/main.js'));

const cases = [];
for (const c of corpora) cases.push(...JSON.parse(fs.readFileSync(c, 'utf-8')));
for (const name of fs.readdirSync(seedsDir).sort()) {
  if (/^0.*\.txt$/.test(name)) cases.push({ name: 'seed ' + name, text: fs.readFileSync(path.join(seedsDir, name), 'utf-8') });
}
const out = {};
for (const family of families) {
  const dir = path.join(outDir, family);
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf-8')),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf-8')),
  });
  out[family] = cases.map(c => ({
    name: c.name,
    text: c.text,
    ids: tokenizer.encode(c.text),
    ids_no_special: tokenizer.encode(c.text, { add_special_tokens: false }),
    nfc: c.text.normalize('NFC'),
  }));
}
process.stdout.write(JSON.stringify(out));
