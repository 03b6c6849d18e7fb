// Which parts of the node binary a process keeps resident (the file pages of its RSS): reads /proc/PID/pagemap
// (needs root) for the binary's mappings and attributes each resident 4 KiB page to the symbol that covers it
// (nm -S -C), grouped by library or V8 component, or to its ELF section when no symbol does.
//   node bench/tools/binpages.mjs PID [top]
import { execFileSync } from 'node:child_process';
import { openSync, readSync, readFileSync, readlinkSync } from 'node:fs';
const pid = process.argv[2]; const top = Number(process.argv[3] ?? 30);
const exe = readlinkSync(`/proc/${pid}/exe`);
const syms = execFileSync('nm', ['-S', '-C', '--defined-only', exe], { encoding: 'utf8', maxBuffer: 1 << 28 }).split('\n')
  .map((l) => /^([0-9a-f]+) (?:([0-9a-f]+) )?(\w) (.*)$/.exec(l)).filter((m) => m && !m[4].startsWith('.annobin'))
  .map((m) => ({ addr: parseInt(m[1], 16), size: parseInt(m[2] ?? '0', 16), type: m[3], name: m[4] }))
  .filter((s) => s.addr >= 0x400000).sort((a, b) => a.addr - b.addr);
const sections = execFileSync('readelf', ['-SW', exe], { encoding: 'utf8' }).split('\n')
  .map((l) => /\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)/.exec(l)).filter(Boolean)
  .map((m) => ({ name: m[1], addr: parseInt(m[2], 16), size: parseInt(m[3], 16) })).filter((s) => s.addr > 0);
const section = (a) => sections.find((s) => s.addr <= a && a < s.addr + s.size)?.name ?? '?';
const find = (a) => { let lo = 0, hi = syms.length - 1; while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (syms[mid].addr <= a) lo = mid; else hi = mid - 1; } return syms[lo]; };
const group = (s) => {
  const n = s.name;
  if (n.startsWith('icudt')) return 'ICU data';
  if (/^v8_Default_embedded_blob/.test(n) || /Builtins_/.test(n)) return 'V8 embedded builtins';
  for (const [re, g] of [[/v8::internal::compiler::turboshaft/, 'v8 turboshaft'], [/v8::internal::compiler/, 'v8 compiler (turbofan)'],
    [/v8::internal::maglev/, 'v8 maglev'], [/v8::internal::wasm|wasm/i, 'v8 wasm'], [/v8::internal::baseline|Baseline/, 'v8 sparkplug'],
    [/v8::internal::interpreter/, 'v8 interpreter'], [/v8::internal::(Parser|Scanner|PreParser)|ParserBase|Scanner|Preparse/, 'v8 parser'],
    [/v8::internal::heap|Heap|Scavenger|MarkCompact|Sweeper|MinorMS|Marking|cppgc/, 'v8 heap/gc'],
    [/^v8::internal::.*Regexp|RegExp|regexp/i, 'v8 regexp'], [/^v8::internal::(Runtime_|__RT_impl)/, 'v8 runtime fns'],
    [/^v8::internal::/, 'v8 other'], [/^v8::/, 'v8 api'], [/^node::builtins|_raw$|node::native_module/, 'node builtin sources'],
    [/^node::/, 'node'], [/^icu_/, 'ICU code'], [/^ossl_|^EVP_|^SSL_|^OPENSSL|^CRYPTO|^BN_|^ASN1|^X509|^ec|^RSA|^aes|^sha|^tls|^ssl|_nid|nid_objs|ecp_nistz/, 'openssl'],
    [/^uv_|^uv__/, 'libuv'], [/^ada::/, 'ada'], [/simdutf/, 'simdutf'], [/^sqlite3/, 'sqlite'], [/nghttp|ngtcp|nghttp3/, 'nghttp'],
    [/^llhttp|^llparse/, 'llhttp'], [/Brotli|brotli|kStaticDictionary|kBrotli/, 'brotli'], [/^std::|^__gnu|^operator/, 'libstdc++'],
    [/deflate|inflate|crc32|adler|zstd|ZSTD/i, 'zlib/zstd']]) if (re.test(n)) return g;
  return 'other';
};
const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n').map((l) => /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s+(.*)$/.exec(l))
  .filter((m) => m && m[4] === exe);
const fd = openSync(`/proc/${pid}/pagemap`, 'r');
const byGroup = new Map(), bySym = new Map(), byPerm = new Map();
for (const m of maps) {
  const start = parseInt(m[1], 16), end = parseInt(m[2], 16), pages = (end - start) / 4096;
  const buf = Buffer.alloc(pages * 8);
  readSync(fd, buf, 0, buf.length, (start / 4096) * 8);
  for (let i = 0; i < pages; i++) {
    if (!(buf.readBigUInt64LE(i * 8) >> 63n)) continue;
    const a = start + i * 4096, f = find(a + 2048), covered = f.size === 0 || f.addr + f.size > a;
    const s = covered ? f : { name: `(${section(a)}, after ${f.name.slice(0, 40)})`, size: 0 }, g = covered ? group(s) : `unsymbolized ${section(a)}`;
    byGroup.set(g, (byGroup.get(g) ?? 0) + 4); byPerm.set(m[3], (byPerm.get(m[3]) ?? 0) + 4);
    const k = `${g}: ${s.name.slice(0, 90)}`; bySym.set(k, (bySym.get(k) ?? 0) + 4);
  }
}
const mb = (kb) => (kb / 1024).toFixed(1).padStart(6);
console.log('resident node binary pages by permission:', [...byPerm].map(([k, v]) => `${k} ${mb(v)} MB`).join(', '));
for (const [g, kb] of [...byGroup].sort((a, b) => b[1] - a[1])) console.log(`${mb(kb)} MB  ${g}`);
console.log('symbols with the most resident pages:');
for (const [k, kb] of [...bySym].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${mb(kb)} MB  ${k}`);
