"""What the house checks (check_includes.py, check_family_names.py) share: the C++ sources they read and the
command line they answer (SOURCE_DIR, or --self-test; one line per offence, exit 1 when there is any)."""
import os, sys

SOURCE_SUFFIXES = ('.h', '.hpp', '.cpp', '.cc')

def source_files(root, tops):
    """(path relative to root, text) of every C++ source under root/TOP for each TOP, in a stable order."""
    for top in tops:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(folder, name)
                    with open(path, encoding='utf-8', errors='replace') as f:
                        yield os.path.relpath(path, root), f.read()

def main(find, self_test, summary=None):
    """find(root) -> offence lines; self_test() asserts; summary(count) -> a line for stderr, or None."""
    if '--self-test' in sys.argv:
        self_test()
        sys.exit(0)
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
    bad = find(root)
    for line in bad:
        print(line)
    if summary:
        print(summary(len(bad)), file=sys.stderr)
    sys.exit(1 if bad else 0)
