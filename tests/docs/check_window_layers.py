#!/usr/bin/env python3
"""House rule: the window's folders include one another one way (panels above views above the subject, the maps
and GL below them; app/README.md). Two folders of app/window/ that include each other are a knot this check names,
pair by pair. The window's root (app_state.h, view_state.h, the loop) is the hub every folder may include and that
includes them all, so it is left out. Usage: check_window_layers.py SOURCE_DIR [--self-test]."""
import os, re, tempfile

from house_check import main, source_files

INCLUDE = re.compile(r'^\s*#\s*include\s*"window/([^"]+)"', re.M)
WINDOW = os.path.join('app', 'window')

def offenders(root):
    includes = {}  # (folder, folder it includes) -> the first file that does
    for rel, text in source_files(root, (WINDOW,)):
        folder = os.path.relpath(os.path.dirname(rel), WINDOW)
        for m in INCLUDE.finditer(text):
            target = os.path.dirname(m.group(1)) or '.'
            if '.' not in (folder, target) and folder != target:
                includes.setdefault((folder, target), rel)
    return [f'{includes[(a, b)]} includes window/{b}/ and {includes[(b, a)]} includes window/{a}/: one must not'
            for (a, b) in sorted(includes) if a < b and (b, a) in includes]

def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            path = os.path.join(root, WINDOW, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
        write('view_state.h', '#include "window/panels/p.h"\n')
        write('panels/p.h', '#include "window/view_state.h"\n#include "window/maps/m.h"\n')
        write('maps/m.h', '#include "window/view_state.h"\n')
        assert offenders(root) == [], offenders(root)
        write('maps/m.cpp', '#include "window/panels/p.h"\n')
        got = offenders(root)
        assert len(got) == 1 and got[0].startswith(os.path.join(WINDOW, 'maps', 'm.cpp')), got
    print('check_window_layers: self-test passed')

if __name__ == '__main__':
    main(offenders, self_test)
