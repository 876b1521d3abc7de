#!/usr/bin/python3
"""Hostile zip archives for bench/decisions/json_zip.sh's `hostile` step,
written into DIR (deterministic). Each stands for a class of damage or
deceit that crossbind's zip reader refuses (src/formats/zip.h):

  ok.zip               two entries, stored and deflated (the baseline)
  truncated-half.zip   the baseline cut in half
  truncated-tail.zip   the baseline without its last 10 bytes
  trailing-bytes.zip   16 bytes after the end-of-directory record
  crc-flipped.zip      one data byte flipped (the CRC no longer matches)
  local-name.zip       a local header naming another entry than the directory
  local-sizes.zip      a local header declaring other sizes than the directory
  overlap.zip          entry b's local header and data lie inside entry a's data
  duplicate-name.zip   the name "a" twice, with different contents
  hidden-entry.zip     a directory of 3 records whose end record counts 2
  huge-stored.zip      a stored entry declaring 4 GiB in a 200-byte file
  bomb-declared-24.zip a deflated entry declaring 24 bytes (and their CRC)
                       whose stream inflates to 16 MiB
  ratio-4g.zip         a deflated entry declaring 4 GiB from 20 compressed bytes

Usage: /usr/bin/python3 gen_hostile_zips.py DIR
"""
import os
import struct
import sys
import zlib


def deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def build(entries, trailing=b"", count=None):
    """entries: dicts with name, data (as stored), method, crc, usize; optional
    local_name, local_sizes (csize, usize), offset (central offset override)."""
    out, central = bytearray(), bytearray()
    for e in entries:
        if "raw_offset" not in e:
            e["offset"] = len(out)
            lname = e.get("local_name", e["name"]).encode()
            cs, us = e.get("local_sizes", (len(e["data"]), e["usize"]))
            out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, e["method"], 0, 0, e["crc"], cs, us, len(lname), 0)
            out += lname + e["data"]
        else:
            e["offset"] = e["raw_offset"]
    cd = len(out)
    for e in entries:
        n = e["name"].encode()
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, e["method"], 0, 0, e["crc"],
                               e.get("central_csize", len(e["data"])), e["usize"], len(n), 0, 0, 0, 0, 0, e["offset"])
        central += n
    k = len(entries) if count is None else count
    eocd = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, k, k, len(central), cd, 0)
    return bytes(out + central + eocd + trailing)


def stored(name, data, **kw):
    return dict(name=name, data=data, method=0, crc=zlib.crc32(data), usize=len(data), **kw)


def deflated(name, data, **kw):
    return dict(name=name, data=deflate(data), method=8, crc=zlib.crc32(data), usize=len(data), **kw)


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    a, b = b"hello, zip " * 10, b"world " * 300
    files = {}
    ok = build([stored("a", a), deflated("b", b)])
    files["ok.zip"] = ok
    files["truncated-half.zip"] = ok[:len(ok) // 2]
    files["truncated-tail.zip"] = ok[:-10]
    files["trailing-bytes.zip"] = ok + b"JUNK" * 4
    flipped = bytearray(ok)
    flipped[30 + 1 + 3] ^= 1
    files["crc-flipped.zip"] = bytes(flipped)
    files["local-name.zip"] = build([stored("a", a, local_name="c"), deflated("b", b)])
    files["local-sizes.zip"] = build([stored("a", a, local_sizes=(len(a) - 10, len(a) - 10)), deflated("b", b)])
    # overlap: a's data is b's local header followed by b's data.
    inner = b"zzz" * 20
    lb = struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 0, 0, 0, zlib.crc32(inner), len(inner), len(inner), 1, 0) + b"b" + inner
    files["overlap.zip"] = build([stored("a", lb), dict(stored("b", inner), raw_offset=30 + 1)])
    files["duplicate-name.zip"] = build([stored("a", a), stored("a", b"other " * 5)])
    files["hidden-entry.zip"] = build([stored("a", a), deflated("b", b), stored("hidden", b"unseen by some")], count=2)
    files["huge-stored.zip"] = build([dict(stored("a", a), usize=0xFFFFFFF0, local_sizes=(0xFFFFFFF0, 0xFFFFFFF0),
                                           central_csize=0xFFFFFFF0)])
    big = b"\x00" * (16 << 20)
    files["bomb-declared-24.zip"] = build([dict(name="a", data=deflate(big), method=8, crc=zlib.crc32(big[:24]), usize=24,
                                                local_sizes=(len(deflate(big)), 24))])
    files["ratio-4g.zip"] = build([dict(name="a", data=deflate(b"\x00" * 1000), method=8, crc=0, usize=0xFFFFFFF0,
                                        local_sizes=(len(deflate(b"\x00" * 1000)), 0xFFFFFFF0))])
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print(len(files), "hostile archives in", d)


if __name__ == "__main__":
    main()
