#!/usr/bin/env python3
"""Checks the README and docs/*.md (no network):
- every relative link names a file that exists, and every #anchor one of that file's headings (GitHub's
  slugs: lower case, punctuation other than '-' and '_' dropped, each space a '-', repeats suffixed -1, -2);
- README.md is the front door: at most 250 lines, and its images exist;
- the README's test command (the second line of its first sh block) is the command .ci/run runs.
Usage: check_docs.py SOURCE_DIR. Prints one line per problem; exit 1 when there is any."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
problems = []

def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)  # \w keeps letters, digits and '_'
    return s.replace(' ', '-')

def strip_code(text):
    # Links inside code blocks and code spans are not links.
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    return re.sub(r'`[^`\n]*`', '', text)

def anchors(path):
    seen, out = {}, set()
    with open(path, encoding='utf-8') as f:
        text = re.sub(r'^```.*?^```', '', f.read(), flags=re.S | re.M)
    for m in re.finditer(r'^#{1,6}\s+(.*?)\s*#*\s*$', text, flags=re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f'{base}-{n}')
        seen[base] = n + 1
    return out

files = ['README.md'] + sorted('docs/' + f for f in os.listdir(os.path.join(root, 'docs')) if f.endswith('.md'))
for rel in files:
    path = os.path.join(root, rel)
    with open(path, encoding='utf-8') as f:
        text = strip_code(f.read())
    for m in re.finditer(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)', text):
        target = m.group(1)
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):
            continue  # https:, mailto: ...: not checked here (no network)
        file_part, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            problems.append(f'{rel}: link ({target}): expected an existing file, got none at {os.path.relpath(dest, root)}')
            continue
        if anchor:
            if not dest.endswith('.md'):
                problems.append(f'{rel}: link ({target}): expected an anchor only into Markdown, got one into {file_part}')
            elif anchor not in anchors(dest):
                problems.append(f'{rel}: link ({target}): expected a heading #{anchor} in {os.path.relpath(dest, root)}, got none')

with open(os.path.join(root, 'README.md'), encoding='utf-8') as f:
    readme = f.read()
lines = readme.count('\n')
if lines > 250:
    problems.append(f'README.md: expected at most 250 lines (the front door; the manual is in docs/), got {lines}')
block = re.search(r'^```sh\n(.*?)^```', readme, flags=re.S | re.M)
commands = [l.split('#')[0].strip() for l in block.group(1).splitlines()] if block else []
commands = [c for c in commands if c]
with open(os.path.join(root, '.ci', 'run'), encoding='utf-8') as f:
    ci = [l.strip() for l in f if l.strip() and not l.startswith('#') and not l.startswith('set ') and not l.startswith('cd ')]
if len(commands) < 2:
    problems.append(f'README.md: expected two commands in the first ```sh block, got {len(commands)}')
elif ci != [commands[1]]:
    problems.append(f'.ci/run: expected to run the README\'s test command {commands[1]!r} alone, got {ci!r}')

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
