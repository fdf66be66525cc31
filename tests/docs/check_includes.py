#!/usr/bin/env python3
"""House rule: Eigen and the compiler's intrinsics headers are included through engine/include/attnscope/eigen.h
alone, whose pragmas quiet the warnings GCC 12 raises in their text (GCC bug 105593 under AVX-512 -march
targets). A direct #include <Eigen/...> or <...intrin.h> elsewhere could be read first, outside the pragmas, and
make CI's -Werror verdict depend on the CPU. Usage: check_includes.py SOURCE_DIR [--self-test].
Prints one line per offending include; exit 1 when there is any."""
import os, re, tempfile

from house_check import main, source_files

PATTERN = re.compile(r'^\s*#\s*include\s*[<"]((?:Eigen|unsupported/Eigen)/[^>"]*|[A-Za-z0-9_]*intrin\.h)[>"]', re.M)
ALLOWED = os.path.join('engine', 'include', 'attnscope', 'eigen.h')

def offenders(root):
    found = []
    for rel, text in source_files(root, ('engine', 'app', 'tests')):
        if rel == ALLOWED:
            continue
        for m in PATTERN.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            found.append(f'{rel}:{line}: includes <{m.group(1)}> directly; include "attnscope/eigen.h"')
    return found

def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'engine', 'include', 'attnscope'))
        os.makedirs(os.path.join(root, 'app'))
        with open(os.path.join(root, ALLOWED), 'w') as f:
            f.write('#include <immintrin.h>\n#include <Eigen/Core>\n')
        with open(os.path.join(root, 'app', 'ok.cpp'), 'w') as f:
            f.write('#include "attnscope/eigen.h"\n// #include <Eigen/Core> in a comment is text\n')
        assert offenders(root) == [], offenders(root)
        with open(os.path.join(root, 'app', 'bad.cpp'), 'w') as f:
            f.write('#include <vector>\n#  include <Eigen/Dense>\n#include <avx512fintrin.h>\n')
        got = offenders(root)
        assert len(got) == 2 and got[0].startswith(os.path.join('app', 'bad.cpp') + ':2:'), got
    print('check_includes: self-test passed')

if __name__ == '__main__':
    main(offenders, self_test)
