#!/usr/bin/env python3
"""check_abi.py — the ctypes declarations of the matorage package checked against matorage.h.

    check_abi.py [--cc CC] [--binding python/matorage/_abi.py] [--header-dir src/lib]

The binding file is the package's _abi.py, which holds every struct (_STRUCTS) and function
(_signatures) the package declares; it is loaded by path and imports nothing but ctypes.

Compiles two C files against the header: a program printing the offset, size and kind
(signed, unsigned, floating, pointer) of every struct field the binding declares and each
struct's size, compared with what ctypes computes; and, for every function the binding
declares, a call with arguments of the binding's types and its result taken as the binding
says, compiled with conversions as errors.  A renamed, moved, resized, added or retyped
field, or a function whose arguments or result differ, fails with a line naming it.
Exit status: 0 when everything matches, 1 on a mismatch, 2 when the check cannot run.
"""
import argparse
import ctypes
import importlib.util
import os
import shlex
import subprocess
import sys
import re
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# ctypes scalar types: their kind and the C type that has their width and sign.
_SCALARS = [
    (ctypes.c_char, "c", "char"), (ctypes.c_byte, "i", "signed char"),
    (ctypes.c_ubyte, "u", "unsigned char"), (ctypes.c_short, "i", "short"),
    (ctypes.c_ushort, "u", "unsigned short"), (ctypes.c_int, "i", "int"),
    (ctypes.c_uint, "u", "unsigned int"), (ctypes.c_long, "i", "long"),
    (ctypes.c_ulong, "u", "unsigned long"), (ctypes.c_longlong, "i", "long long"),
    (ctypes.c_ulonglong, "u", "unsigned long long"), (ctypes.c_float, "f", "float"),
    (ctypes.c_double, "f", "double"),
]

C_KIND = """
#define KIND(x) _Generic((x), char: 'c', signed char: 'i', unsigned char: 'u', \\
	short: 'i', unsigned short: 'u', int: 'i', unsigned int: 'u', long: 'i', \\
	unsigned long: 'u', long long: 'i', unsigned long long: 'u', float: 'f', \\
	double: 'f', default: 'p')
"""


def _load_binding(path):
    """The declarations module, loaded by path (it needs only ctypes)."""
    spec = importlib.util.spec_from_file_location("matorage_binding", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scalar(t):
    for ct, kind, cname in _SCALARS:
        if t is ct:
            return kind, cname
    return None


def _kind(t):
    s = _scalar(t)
    return s[0] if s else "p"


def _layout_program(structs, scalar_types):
    out = ["#include <stddef.h>", "#include <stdio.h>", '#include "matorage.h"', C_KIND,
           "int main(void)", "{"]
    for st in structs:
        c = st._c_name
        out.append('\tprintf("%s size %%zu\\n", sizeof(%s));' % (c, c))
        for name, _ in st._fields_:
            out.append('\tprintf("%s.%s %%zu %%zu %%c\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s), '
                       'KIND(((%s *)0)->%s));' % (c, name, c, name, c, name, c, name))
    for t in scalar_types:
        out.append('\tprintf("type:%s %%zu %%c\\n", sizeof(%s), KIND((%s)0));' % (t, t, t))
    out += ["\treturn 0;", "}", ""]
    return "\n".join(out)


def _expected_layout(structs):
    lines = []
    for st in structs:
        lines.append("%s size %d" % (st._c_name, ctypes.sizeof(st)))
        for name, t in st._fields_:
            f = getattr(st, name)
            lines.append("%s.%s %d %d %s" % (st._c_name, name, f.offset, f.size, _kind(t)))
    return lines


def _prototypes(header):
    """Each MT_API function of the header: name -> (result type, [parameter types])."""
    text = re.sub(r"/\*.*?\*/", " ", open(header).read(), flags=re.S)
    # Preprocessor lines (the MT_API definition itself) are not declarations.
    text = re.sub(r"^[ \t]*#.*$", " ", text, flags=re.M)
    out = {}
    for m in re.finditer(r"MT_API\s+([^;{}]*?)\b(mt_\w+)\s*\(([^;]*?)\)\s*;", text, re.S):
        params, depth, cur = [], 0, ""
        for ch in m.group(3):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                params.append(cur)
                cur = ""
            else:
                cur += ch
        params.append(cur)
        params = [_param_type(p) for p in params if p.strip() not in ("", "void")]
        out[m.group(2)] = (" ".join(m.group(1).split()), params)
    return out


def _param_type(p):
    """A parameter's type without its name ("const mt_batch **out" -> "const mt_batch **")."""
    p = " ".join(p.split())
    m = re.match(r"^(.*?[\s*])(\w+)$", p)
    if m and m.group(1).strip() not in ("", "const", "unsigned", "signed"):
        p = m.group(1)
    return p.replace(" *", "*").replace("*", " *").strip()


def _split_c(t):
    """(base type without qualifiers, pointer depth) of a C type's text."""
    depth = t.count("*")
    base = " ".join(w for w in t.replace("*", " ").split() if w not in ("const", "volatile"))
    return base, depth


def _split_ctypes(t):
    """(scalar ctypes type, struct C name or None, pointer depth, any pointee) of a ctypes type."""
    depth = 0
    while True:
        if t is ctypes.c_void_p:
            return None, None, depth + 1, True
        if t is ctypes.c_char_p:
            return ctypes.c_char, None, depth + 1, False
        target = getattr(t, "_type_", None)
        if isinstance(target, type) and issubclass(t, ctypes._Pointer):
            t, depth = target, depth + 1
            continue
        if hasattr(t, "_c_name"):
            return None, t._c_name, depth, False
        return t, None, depth, False


def _check_type(where, ct, c_text, scalars):
    """A line saying how ctypes type ct differs from the C type c_text, or None."""
    if ct is None:
        return None if c_text == "void" else "%s: the binding says void, matorage.h %s" % (where, c_text)
    if c_text == "void":
        return "%s: matorage.h says void, the binding %s" % (where, ct.__name__)
    scalar, struct, depth, any_pointee = _split_ctypes(ct)
    base, c_depth = _split_c(c_text)
    if any_pointee:
        ok = c_depth >= depth
    elif struct:
        ok = c_depth == depth and base == struct
    else:
        want = scalars.get(base)
        ok = c_depth == depth and want == (ctypes.sizeof(scalar), _kind(scalar))
    return None if ok else "%s: the binding declares %s, matorage.h says %s" % (where, ct.__name__, c_text)


def _check_functions(sigs, protos, scalars):
    bad = []
    for fn, (res, args) in sorted(sigs.items()):
        if fn not in protos:
            bad.append("%s: not an MT_API function of matorage.h" % fn)
            continue
        c_res, c_args = protos[fn]
        if len(args) != len(c_args):
            bad.append("%s: the binding passes %d arguments, matorage.h takes %d"
                       % (fn, len(args), len(c_args)))
            continue
        bad.append(_check_type(fn + " result", res, c_res, scalars))
        for i, (a, c) in enumerate(zip(args, c_args)):
            bad.append(_check_type("%s argument %d" % (fn, i + 1), a, c, scalars))
    return [b for b in bad if b]


def _scalar_types(protos, sigs):
    """The non-pointer C types the binding's functions use, to measure."""
    out = set()
    for fn in sigs:
        res, params = protos.get(fn, ("void", []))
        for t in [res] + params:
            base, depth = _split_c(t)
            # Handles and structs are only ever behind pointers, and may be incomplete.
            if base != "void" and (depth == 0 or not base.startswith("mt_")):
                out.add(base)
    return sorted(out)


def _run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.stdout + p.stderr if p.returncode else None


def _measure(cc, header_dir, structs, scalar_types):
    """What the compiler says: 'key' -> 'values' lines of the layout program, or an error text."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
        with open(src, "w") as f:
            f.write(_layout_program(structs, scalar_types))
        msg = _run(cc + ["-std=gnu11", "-I", header_dir, src, "-o", exe])
        if msg:
            return None, "\n".join(line for line in msg.splitlines() if "error" in line)
        got = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in got.splitlines()), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--binding", default=os.path.join(HERE, "matorage", "_abi.py"))
    ap.add_argument("--header-dir", default=os.path.join(HERE, "..", "src", "lib"))
    o = ap.parse_args()
    mod = _load_binding(o.binding)
    name = os.path.relpath(o.binding) if not os.path.isabs(o.binding) else o.binding
    structs, sigs = mod._STRUCTS, mod._signatures()
    protos = _prototypes(os.path.join(o.header_dir, "matorage.h"))
    scalar_types = _scalar_types(protos, sigs)
    got, msg = _measure(shlex.split(o.cc), o.header_dir, structs, scalar_types)
    if msg:
        print(name + " declares a struct or field matorage.h does not have:\n" + msg,
              file=sys.stderr)
        return 1
    bad = []
    for line in _expected_layout(structs):
        key, want = line.split(" ", 1)
        if got.get(key) != want:
            bad.append("%s: %s is %s, matorage.h says %s (offset size kind)"
                       % (name, key, want, got.get(key)))
    scalars = {t: (int(got["type:" + t].split()[0]), got["type:" + t].split()[1])
               for t in scalar_types}
    bad += [name + ": " + b for b in _check_functions(sigs, protos, scalars)]
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        return 1
    print("%s matches matorage.h: %d structs, %d functions"
          % (name, len(structs), len(sigs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
