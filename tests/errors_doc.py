#!/usr/bin/env python3
"""Fails when docs/errors.md's catalogue drifts from the code or from the tests.

Every catalogue row of docs/errors.md,

    | `message fragment` | cause and fix | exit code | test case name |

is checked: the fragment (the text in the row's first backticks, with the
table escape \\| undone) must occur in some file under src/; a fragment that
spans a format placeholder is written with `…` or `{}` there, and then each
piece must occur. The test case must exist as TEST_CASE("...") in a file under
tests/, and that file must hold the fragment (each piece) too, so that the test
really looks for the message. C string escapes (\\" and \\\\) are undone in the
source and test files before they are searched.

usage: errors_doc.py SOURCE_DIR     check the tree; exit 1 listing every problem
       errors_doc.py --self-test    check that bad rows are found (a tree made in
                                    a temporary folder), exit 0 if they are
"""
import os
import re
import sys
import tempfile

DOC = os.path.join("docs", "errors.md")
SOURCE_EXTS = (".cpp", ".hpp", ".h", ".c", ".cc", ".inc")
TEST_CASE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def unescape_c(text):
    return text.replace('\\\\', '\x00').replace('\\"', '"').replace('\x00', '\\')


def read_tree(root, sub):
    files = {}
    base = os.path.join(root, sub)
    for dirpath, _, names in os.walk(base):
        for name in names:
            if not name.endswith(SOURCE_EXTS):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                files[os.path.relpath(path, root)] = unescape_c(f.read())
    return files


def split_cells(line):
    """The cells of a markdown table row; \\| inside a cell is not a separator."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def parse_rows(doc_text):
    """(line number, fragment, exit code cell, test name) of every catalogue row:
    a table row whose first cell starts with a backtick."""
    rows = []
    for n, line in enumerate(doc_text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        cells = split_cells(line)
        if not cells or not cells[0].startswith("`"):
            continue
        m = re.match(r"`([^`]+)`", cells[0])
        if not m or len(cells) != 4:
            rows.append((n, None, None, None))
            continue
        test = cells[3].strip()
        if test.startswith("`") and test.endswith("`"):
            test = test[1:-1]
        rows.append((n, m.group(1), cells[2], test))
    return rows


def pieces(fragment):
    return [p for p in re.split(r"…|\{\}", fragment) if p]


def check(root):
    problems = []
    doc_path = os.path.join(root, DOC)
    try:
        with open(doc_path, encoding="utf-8") as f:
            doc = f.read()
    except OSError as e:
        return [f"{DOC}: cannot read: {e}"]
    src = read_tree(root, "src")
    tests = read_tree(root, "tests")
    cases = {}
    for path, text in tests.items():
        for m in TEST_CASE.finditer(text):
            cases.setdefault(m.group(1), []).append(path)
    rows = parse_rows(doc)
    if not rows:
        problems.append(f"{DOC}: no catalogue rows found")
    for n, fragment, code, test in rows:
        where = f"{DOC}:{n}"
        if fragment is None:
            problems.append(f"{where}: a catalogue row needs 4 cells: | `message` | cause and fix | exit code | test |")
            continue
        parts = pieces(fragment)
        if not parts:
            problems.append(f"{where}: `{fragment}` has no text to look for")
            continue
        if not re.fullmatch(r"\s*\d+(\s*(,|or|/)\s*\d+)*\s*", code):
            problems.append(f"{where}: exit code cell '{code}' is not a number")
        missing = [p for p in parts if not any(p in t for t in src.values())]
        if missing:
            problems.append(f"{where}: `{fragment}` is not in any file under src/ (missing: "
                            + ", ".join(repr(p) for p in missing) + ")")
        if ";" in test:
            problems.append(f"{where}: test name '{test}' contains ';'")
        if test not in cases:
            problems.append(f"{where}: no TEST_CASE(\"{test}\") under tests/")
            continue
        if not any(all(p in tests[path] for p in parts) for path in cases[test]):
            problems.append(f"{where}: `{fragment}` does not occur in {', '.join(cases[test])}, "
                            f"the file of TEST_CASE(\"{test}\")")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        write("src/a.cpp", 'throw InputError(fmt::format("{}: key \\"{}\\" appears twice", what, key));\n'
                           'throw InputError("a | pipe");\n')
        write("tests/t.cpp", 'TEST_CASE("dup keys") { expect_error(d, r, 2, {"key \\"kernel\\" appears twice"}); }\n'
                             'TEST_CASE("pipes") { CHECK(err.find("a | pipe") != npos); }\n'
                             )
        write("tests/u.cpp", 'TEST_CASE("other") { CHECK(true); }\n')
        good = ("| message | cause | exit | test |\n|---|---|---|---|\n"
                '| `key "…" appears twice` | a duplicate key | 2 | dup keys |\n'
                "| `a \\| pipe` | escaped pipe | 2 | `pipes` |\n")
        write(DOC, good)
        ok = check(root)
        if ok:
            print("self-test: a good catalogue was refused:\n  " + "\n  ".join(ok))
            return 1
        bad_rows = [
            ("| `no such message` | x | 2 | dup keys |\n", "not in any file under src/"),
            ("| `appears twice` | x | 2 | no such test |\n", "no TEST_CASE"),
            ("| `appears twice` | x | 2 | other |\n", "does not occur in"),
            ("| `appears twice` | x | 2 |\n", "needs 4 cells"),
            ("| `appears twice` | x | two | dup keys |\n", "not a number"),
        ]
        failed = 0
        for row, expected in bad_rows:
            write(DOC, good + row)
            found = check(root)
            if not any(expected in p for p in found):
                print(f"self-test: row {row.strip()!r} should give a problem with {expected!r}, got {found}")
                failed += 1
        if failed:
            return 1
    print("errors_doc self-test: bad rows are found")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    problems = check(argv[1])
    if problems:
        print(f"{DOC}: {len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"{DOC}: every catalogue row names a message of src/ and a test that checks it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
