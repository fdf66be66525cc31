#!/usr/bin/env python3
"""Shows that check_docs.py catches what it is for, on a tree written here: a missing file, a missing anchor, a
README over 250 lines and a .ci/run that runs something else must each be named; GitHub's anchors for headings
with punctuation and for a repeated heading (-1) must be accepted, and links inside code ignored."""
import os, subprocess, sys, tempfile

checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_docs.py')

def tree(readme, docs, ci='scripts/test.sh'):
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, 'docs'))
    os.makedirs(os.path.join(root, '.ci'))
    with open(os.path.join(root, 'README.md'), 'w') as f:
        f.write(readme)
    for name, text in docs.items():
        with open(os.path.join(root, 'docs', name), 'w') as f:
            f.write(text)
    with open(os.path.join(root, '.ci', 'run'), 'w') as f:
        f.write('#!/usr/bin/env bash\nset -euo pipefail\ncd "$(dirname "$0")/.."\n' + ci + '\n')
    return root

def run(root):
    r = subprocess.run([sys.executable, checker, root], capture_output=True, text=True)
    return r.returncode, r.stdout

commands = '```sh\nscripts/run.sh   # open\nscripts/test.sh  # test\n```\n'
good_docs = {'a.md': '# A\n\n## Tokenizers (tokenizer.json)\n\n## Same\n\n## Same\n\n## Seeds\' pitfalls\n'}
good_readme = commands + ('[a](docs/a.md) [t](docs/a.md#tokenizers-tokenizerjson) [s](docs/a.md#same-1) '
                          '[p](docs/a.md#seeds-pitfalls)\n`[x](docs/missing.md)`\n```\n[y](nowhere.md)\n```\n'
                          '[web](https://example.org/x#y)\n')
failures = []
def expect(name, root, code, needles):
    rc, out = run(root)
    if rc != code or any(n not in out for n in needles):
        failures.append(f'{name}: expected exit {code} naming {needles}, got exit {rc}: {out!r}')

expect('good tree', tree(good_readme, good_docs), 0, [])
expect('missing file', tree(good_readme + '[m](docs/missing.md)\n', good_docs), 1, ['docs/missing.md'])
expect('missing anchor', tree(good_readme + '[m](docs/a.md#same-2)\n', good_docs), 1, ['#same-2'])
expect('missing anchor in docs', tree(good_readme, dict(good_docs, **{'b.md': '# B\n[back](../README.md#nope)\n'})),
       1, ['docs/b.md', '#nope'])
expect('long README', tree(good_readme + 'x\n' * 250, good_docs), 1, ['at most 250 lines'])
expect('ci out of step', tree(good_readme, good_docs, ci='scripts/test.sh --quick'), 1, ['.ci/run'])

for f in failures:
    print(f)
sys.exit(1 if failures else 0)
