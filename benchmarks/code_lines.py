"""Lines of code of package folders at a git revision: lines holding code, without blank lines,
comments or docstrings (what a size comparison across a refactor or a reformat should count).

    python benchmarks/code_lines.py REV stream_lsh/core stream_lsh/pipeline
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize

_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_lines(source: str) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, _DOCUMENTED) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    docs = docstring_lines(source)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _NOT_CODE:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return len(lines)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def main() -> None:
    revision, *folders = sys.argv[1:]
    for folder in folders:
        files = [
            f for f in git("ls-tree", "-r", "--name-only", revision, folder).split() if f.endswith(".py")
        ]
        code = sum(code_lines(git("show", f"{revision}:{f}")) for f in files)
        physical = sum(len(git("show", f"{revision}:{f}").splitlines()) for f in files)
        print(f"{revision} {folder}: {code} lines of code ({physical} lines in {len(files)} files)")


if __name__ == "__main__":
    main()
