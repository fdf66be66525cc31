#!/usr/bin/env python3
"""House rule: a family is a row of the registry (engine/src/model/arch/families.cpp). Outside the family code
(engine/src/model/arch/ and the two headers that are its public face, model/architecture.h and
model/family_configs.h), engine and app code never name a family: no identifier with a family's name in it
(isGpt2, LlamaWeights, phimix...) and no string literal that is a model_type ("gpt2", "llama"...), so that adding a
family is a row, a config reader and its test, and nothing else branches on it. Comments and help text may name
families. Usage: check_family_names.py SOURCE_DIR [--self-test]. One line per offence; exit 1 when there is any."""
import os, re, tempfile

from house_check import main, source_files

FAMILY_CODE = (os.path.join('engine', 'src', 'model', 'arch') + os.sep,
               os.path.join('engine', 'include', 'attnscope', 'model', 'architecture.h'),
               os.path.join('engine', 'include', 'attnscope', 'model', 'family_configs.h'))
MODEL_TYPES = ('gpt2', 'llama', 'mistral', 'qwen2', 'qwen3', 'gpt_neox', 'gemma', 'gemma2', 'gemma3_text', 'gemma3',
               'phi3', 'olmo2', 'mixtral', 'bert', 'roberta')
IDENTIFIER = re.compile(r'\b\w*(?:gpt2|gpt_?neox|neox|llama|mistral|qwen|gemma|phi3|phimix|olmo|mixtral|bert|roberta)'
                        r'\w*\b', re.I)
# Names that formats give their own parts, not families: the tokenizers library's BertNormalizer, BertPreTokenizer
# and BertProcessing (a tokenizer.json of any model may use them) and RoPE's llama3 frequency scaling (a rope_type).
FORMAT_NAMES = {'Bert', 'isBertControl', 'bertNormalize', 'isBertPunctuation', 'Llama3', 'llama3'}
# Comments, then string and character literals (raw strings are not used in engine/ and app/).
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)
LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')

def offences_in(text, rel):
    found = []
    def line_of(pos):
        return text.count('\n', 0, pos) + 1
    # Blank comments keeping offsets (so that line numbers hold), then literals.
    code = COMMENT.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)
    for m in LITERAL.finditer(code):
        if m.group(0)[1:-1] in MODEL_TYPES:
            found.append(f'{rel}:{line_of(m.start())}: the model_type {m.group(0)} outside the family registry')
    bare = LITERAL.sub(lambda m: ' ' * len(m.group(0)), code)
    for m in IDENTIFIER.finditer(bare):
        if m.group(0) in FORMAT_NAMES:
            continue
        if bare[max(0, m.start() - 1)] == '#' or re.match(r'\s*#\s*include', bare[bare.rfind('\n', 0, m.start()) + 1:]):
            continue
        found.append(f'{rel}:{line_of(m.start())}: {m.group(0)} names a family outside the family code')
    return found

def offences(root):
    found = []
    for rel, text in source_files(root, ('engine', 'app')):
        if not (rel.startswith(FAMILY_CODE[0]) or rel in FAMILY_CODE[1:]):
            found += offences_in(text, rel)
    return found

def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'engine', 'src', 'model', 'arch'))
        os.makedirs(os.path.join(root, 'app'))
        with open(os.path.join(root, 'engine', 'src', 'model', 'arch', 'families.cpp'), 'w') as f:
            f.write('const char* k = "gpt2";\nArchitecture readLlama();\n')
        with open(os.path.join(root, 'app', 'ok.cpp'), 'w') as f:
            f.write('// GPT-2 and Llama in a comment\nconst char* help = "GPT-2 (config.json), gpt2 folders";\n'
                    'std::string n = model::familyDisplayName(type);\n')
        assert offences(root) == [], offences(root)
        with open(os.path.join(root, 'app', 'bad.cpp'), 'w') as f:
            f.write('int x;\nif (type == "gpt2") {}\nbool isGemmaFamily(int);\n/* "llama" */ int y;\n')
        got = offences(root)
        bad = os.path.join('app', 'bad.cpp')
        assert len(got) == 2 and got[0].startswith(bad + ':2:') and got[1].startswith(bad + ':3:'), got
    print('check_family_names: self-test passed')

if __name__ == '__main__':
    main(offences, self_test, lambda n: f'check_family_names: {n} places outside the family code name a family')
