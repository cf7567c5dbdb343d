// The toolbar icon, drawn at each size as a PNG (a blue rounded square with a white bookmark ribbon),
// so the repository holds no binary files and the build needs nothing but Node.
import { deflateSync } from "node:zlib";

const BLUE = [11, 92, 173, 255];
const WHITE = [255, 255, 255, 255];
const CLEAR = [0, 0, 0, 0];

function pixel(x, y, size) {
  const u = (x + 0.5) / size;
  const v = (y + 0.5) / size;
  const r = 0.2; // corner radius, as a fraction of the side
  const cx = Math.min(Math.max(u, r), 1 - r);
  const cy = Math.min(Math.max(v, r), 1 - r);
  if ((u - cx) ** 2 + (v - cy) ** 2 > r * r) return CLEAR;
  // The ribbon: a rectangle from 30% to 70% wide, 18% to 84% high, with a notch cut into its bottom.
  const inRibbon = u >= 0.3 && u <= 0.7 && v >= 0.18 && v <= 0.84;
  const notch = v > 0.84 - (0.2 - Math.abs(u - 0.5)) && v > 0.64;
  return inRibbon && !notch ? WHITE : BLUE;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

export function icon(size) {
  const rows = [];
  for (let y = 0; y < size; y += 1) {
    const row = [0]; // filter: none
    for (let x = 0; x < size; x += 1) row.push(...pixel(x, y, size));
    rows.push(Buffer.from(row));
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", header), chunk("IDAT", deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
}
