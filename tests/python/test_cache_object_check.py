"""A disk cache entry whose object bytes are corrupt but re-hashed is refused, never linked into
an abort (issue 34 item 6).

A writer with the user's rights can change an entry's object and recompute its XXH3 hash, so
every check up to `hash_mismatch` passes. LLVM's linker (RuntimeDyld) trusts the object's
structure; before the fix such an entry aborted the process (SIGABRT) when linked. Now
`mlir_lowering::CheckObject` validates the object first and the disk tier rejects it with
`load_failed`, recompiles the group and computes the right result.

A warm directory is filled once (compile mode). Each case copies it, corrupts the object of every
entry the same way (truncations, flipped or rewritten fields of the ELF header, the section
header table, the symbol table and the relocations; then seeded random byte flips inside those
structures: 4 cases by default, 48 with --full), re-hashes each entry and runs the same program in a fresh process, so an abort
fails the case instead of killing pytest. Every case must exit 0 with PyTorch CPU's result, and
each entry must either load or be rejected with `load_failed` (never another reason: the
re-hash is right). Out of scope: flips in machine code, and random flips of locations and values
that stay valid (a relocation's addend or type, a section's offset): the result is another well-formed
object whose code reads wrong addresses, which a writer that can re-hash an entry could write
anyway (docs/cache.md, trust).
"""
import ctypes
import ctypes.util
import os
import random
import shutil
import struct

import pytest
import torch

from helpers import last_json, run_python

COMPILE = {"NEURON_MODE": "compile", "NEURON_OPT_LEVEL": "1", "NEURON_COMPILE_WORKERS": "1"}

PROGRAM = """import json, torch, torch_trn
x = torch.linspace(-3.0, 3.0, 64).reshape(8, 8).to("neuron")
w = torch.linspace(0.5, 1.5, 64).reshape(8, 8).to("neuron")
y = ((x * 2 + 1).relu() * w).sum(dim=1)
z = torch.tanh(x).mean()
print(json.dumps({"y": y.cpu().tolist(), "z": z.item(), "cache": torch_trn.cache_stats()["disk"]}))
"""


def cpu_result():
    x = torch.linspace(-3.0, 3.0, 64).reshape(8, 8)
    w = torch.linspace(0.5, 1.5, 64).reshape(8, 8)
    return ((x * 2 + 1).relu() * w).sum(dim=1), torch.tanh(x).mean()


def run(cache_dir):
    env = {**COMPILE, "NEURON_CACHE_DIR": str(cache_dir)}
    return run_python(PROGRAM, env=env, drop=[k for k in os.environ if k.startswith("NEURON_")])


# --------------------------------------------------------------------------------------------
# entries: the header's object fields and its XXH3-64 (docs/cache.md, entry format)
# --------------------------------------------------------------------------------------------
_xxh = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def entry_paths(d):
    return sorted(os.path.join(root, n) for root, _, files in os.walk(d) for n in files
                  if ".O" in n and not n.startswith("."))


def read_object(path):
    with open(path, "rb") as f:
        data = f.read()
    header_size, = struct.unpack_from("<I", data, 12)
    object_size, = struct.unpack_from("<Q", data, 16)
    return data[:header_size], data[header_size:header_size + object_size]


def write_object(path, header, obj):
    """The entry with `obj` as its object, its size and hash fixed: it passes every check up to
    and including hash_mismatch."""
    data = bytearray(header + obj)
    struct.pack_into("<Q", data, 16, len(obj))
    struct.pack_into("<Q", data, 24, _xxh.XXH3_64bits(bytes(data[32:]), len(data) - 32))
    with open(path, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------------------------
# ELF64 structure (little-endian): where the header, section headers, symbols, relocations are
# --------------------------------------------------------------------------------------------
SHT_SYMTAB, SHT_RELA = 2, 4


def sections(obj):
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    out = []
    for i in range(shnum):
        base = shoff + 64 * i
        sh_type, = struct.unpack_from("<I", obj, base + 4)
        sh_offset, sh_size = struct.unpack_from("<QQ", obj, base + 24)
        out.append({"index": i, "base": base, "type": sh_type, "offset": sh_offset, "size": sh_size})
    return out


def of_type(obj, sh_type):
    return [s for s in sections(obj) if s["type"] == sh_type]


def patch(obj, offset, fmt, value):
    out = bytearray(obj)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def each_entry_of(obj, sh_type, entsize, field, fmt, value):
    """Every entry of every section of `sh_type` with `field` set to `value`."""
    for s in of_type(obj, sh_type):
        for k in range(1 if sh_type == SHT_SYMTAB else 0, s["size"] // entsize):  # (symbol 0 is null)
            obj = patch(obj, s["offset"] + k * entsize + field, fmt, value)
    return obj


def each_section(obj, field, fmt, value, sh_type=None):
    for s in sections(obj):
        if sh_type is None or s["type"] == sh_type:
            obj = patch(obj, s["base"] + field, fmt, value)
    return obj


# Byte ranges (relative to their record) of the fields that say what a record is and where its
# table entries point, as opposed to locations and values (sh_offset, sh_size, st_value, st_size,
# st_shndx, and every field of a relocation: offset, symbol, type, addend): a flip that keeps
# such a value valid is another well-formed object (its code reads another address: seen with a
# flipped addend, and with GOT64 flipped to GOTPC32), which no structural check can tell from
# the original; the deterministic cases above make them invalid instead.
SHDR_KIND_FIELDS = [(0, 24), (40, 64)]            # name, type, flags, addr; link, info, align, entsize
SYM_KIND_FIELDS = [(0, 6)]                        # name, info, other
RELA_KIND_FIELDS = []


def structural_ranges(obj):
    """(start, end) of the bytes a random flip may hit: the ELF header, and the kind fields of
    every section header and symbol."""
    ranges = [(0, 64)]  # the ELF header
    for s in sections(obj):
        ranges += [(s["base"] + a, s["base"] + b) for a, b in SHDR_KIND_FIELDS]
        fields = {SHT_SYMTAB: SYM_KIND_FIELDS, SHT_RELA: RELA_KIND_FIELDS}.get(s["type"], [])
        for k in range(s["size"] // 24 if fields else 0):
            ranges += [(s["offset"] + 24 * k + a, s["offset"] + 24 * k + b) for a, b in fields]
    return ranges


def random_flips(seed, count):
    def corrupt(obj):
        rng = random.Random(seed)
        ranges = structural_ranges(obj)
        out = bytearray(obj)
        for _ in range(count):
            start, end = rng.choice(ranges)
            out[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
        return bytes(out)
    return corrupt


CORRUPTIONS = {
    # truncations
    "truncated_half": lambda o: o[:len(o) // 2],
    "truncated_in_elf_header": lambda o: o[:40],
    "truncated_section_table": lambda o: o[:len(o) - 32],
    "empty": lambda o: b"",
    # the ELF header
    "bad_magic": lambda o: patch(o, 1, "<B", ord("X")),
    "class_32": lambda o: patch(o, 4, "<B", 1),
    "big_endian": lambda o: patch(o, 5, "<B", 2),
    "not_relocatable": lambda o: patch(o, 16, "<H", 3),
    "other_machine": lambda o: patch(o, 18, "<H", 183),   # EM_AARCH64
    "shoff_past_end": lambda o: patch(o, 40, "<Q", 1 << 40),
    "shoff_into_code": lambda o: patch(o, 40, "<Q", 70),
    "shentsize": lambda o: patch(o, 58, "<H", 40),
    "shnum_huge": lambda o: patch(o, 60, "<H", 0xFFF0),
    "shstrndx": lambda o: patch(o, 62, "<H", 0x7F),
    # the section header table
    "section_offset": lambda o: each_section(o, 24, "<Q", 1 << 50),
    "section_size": lambda o: each_section(o, 32, "<Q", 1 << 50),
    "section_name": lambda o: each_section(o, 0, "<I", 0xFFFFFF),
    "section_alignment": lambda o: each_section(o, 48, "<Q", 3),
    "section_alignment_huge": lambda o: each_section(o, 48, "<Q", 1 << 62),
    "symtab_entsize": lambda o: each_section(o, 56, "<Q", 7, SHT_SYMTAB),
    "symtab_link": lambda o: each_section(o, 40, "<I", 999, SHT_SYMTAB),
    "symtab_type": lambda o: each_section(o, 4, "<I", 1, SHT_SYMTAB),
    "rela_link": lambda o: each_section(o, 40, "<I", 999, SHT_RELA),
    "rela_info": lambda o: each_section(o, 44, "<I", 999, SHT_RELA),
    "rela_info_self": lambda o: each_section(o, 44, "<I", 0, SHT_RELA),
    "rela_entsize": lambda o: each_section(o, 56, "<Q", 16, SHT_RELA),
    "rela_as_rel": lambda o: each_section(o, 4, "<I", 9, SHT_RELA),
    "nobits_huge": lambda o: each_section(each_section(o, 4, "<I", 8, 1), 32, "<Q", 1 << 45, 8),
    # the symbol table (every symbol after the null one)
    "symbol_name": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 0, "<I", 0xFFFFFF),
    "symbol_section": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 6, "<H", 0x7FF),
    "symbol_common": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 6, "<H", 0xFFF2),
    "symbol_xindex": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 6, "<H", 0xFFFF),
    "symbol_type_tls": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 4, "<B", 0x16),
    "symbol_type_ifunc": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 4, "<B", 0x1A),
    "symbol_type_file": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 4, "<B", 0x14),
    "symbol_value": lambda o: each_entry_of(o, SHT_SYMTAB, 24, 8, "<Q", 1 << 60),
    # the relocations
    "relocation_offset": lambda o: each_entry_of(o, SHT_RELA, 24, 0, "<Q", 1 << 40),
    "relocation_offset_at_end": lambda o: each_entry_of(o, SHT_RELA, 24, 0, "<Q", 0xFFFFFFFFFFFFFFFE),
    "relocation_type": lambda o: each_entry_of(o, SHT_RELA, 24, 8, "<I", 999),
    "relocation_type_tls": lambda o: each_entry_of(o, SHT_RELA, 24, 8, "<I", 19),   # R_X86_64_TLSGD
    "relocation_symbol": lambda o: each_entry_of(o, SHT_RELA, 24, 12, "<I", 5000),
    "relocation_null_symbol": lambda o: each_entry_of(o, SHT_RELA, 24, 12, "<I", 0),
}
# Seeded random flips: 4 in the default suite, 48 with --full.
CORRUPTIONS.update({f"random_flips_{seed}": random_flips(seed, 1 + seed % 4) for seed in range(48)})
DEFAULT_RANDOM = 4


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        full = metafunc.config.getoption("--full")
        metafunc.parametrize("case", [c for c in CORRUPTIONS if full or not c.startswith("random_flips_")
                                      or int(c.rsplit("_", 1)[1]) < DEFAULT_RANDOM])


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    d = tmp_path_factory.mktemp("objcheck") / "cache"
    out = last_json(run(d))
    paths = entry_paths(d)
    assert len(paths) >= 2 and out["cache"]["writes"] >= 1, out
    return d


def test_warm_cache_loads_from_disk(warm, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm, d)
    out = last_json(run(d))
    assert out["cache"]["rejected"] == {} and out["cache"]["hits"] >= 1, out["cache"]
    y, z = cpu_result()
    torch.testing.assert_close(torch.tensor(out["y"]), y)


def test_corrupt_rehashed_object_is_refused_or_loads(warm, tmp_path, case):
    d = tmp_path / "cache"
    shutil.copytree(warm, d)
    changed = 0
    for path in entry_paths(d):
        header, obj = read_object(path)
        bad = CORRUPTIONS[case](obj)
        changed += bad != obj
        write_object(path, header, bad)
    assert changed >= 1, "the corruption changed no entry"
    proc = run(d)
    assert proc.returncode == 0, f"{case}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    out = last_json(proc)
    y, z = cpu_result()
    torch.testing.assert_close(torch.tensor(out["y"]), y)
    assert abs(out["z"] - z.item()) < 1e-5
    rejected = out["cache"]["rejected"]
    assert set(rejected) <= {"load_failed"}, rejected
    if not case.startswith("random_flips"):
        assert rejected.get("load_failed", 0) >= 1, (case, out["cache"], proc.stderr[-2000:])
