// Tokenizes the "text" field of each JSON line with the Llama 3 tokenizer of assets/tokenizer
// (@lenml/tokenizers, a transformers.js fork; special tokens written in the text are parsed, no
// BOS added: the rendered text starts with <|begin_of_text|>).
//   node tokenize.js IN.jsonl OUT_PREFIX   -> OUT_PREFIX.ids (int32 LE) + OUT_PREFIX.lens (int32 LE)
const fs = require('fs');
const path = require('path');
const { TokenizerLoader } = require('@lenml/tokenizers');
const root = path.resolve(__dirname, '..', '..');
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(root, 'assets/tokenizer/tokenizer.json'))),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(root, 'assets/tokenizer/tokenizer_config.json'))),
});
const [inp, out] = process.argv.slice(2);
const lines = fs.readFileSync(inp, 'utf8').split('\n').filter((l) => l.length);
const ids = [], lens = [];
for (const l of lines) {
  const t = tok.encode(JSON.parse(l).text, { add_special_tokens: false });
  lens.push(t.length);
  for (const x of t) ids.push(x);
}
fs.writeFileSync(out + '.ids', Buffer.from(Int32Array.from(ids).buffer));
fs.writeFileSync(out + '.lens', Buffer.from(Int32Array.from(lens).buffer));
console.log(`${lines.length} documents, ${ids.length} tokens`);
