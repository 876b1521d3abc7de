"""Reference for tests/image_test.sh: the ImageNet input pipeline as
torchvision runs it on Pillow images, and the images the test feeds both.

  image_reference.py gen DIR HOSTILE_DIR
      writes small images that reach every decoding and resizing path
      (odd sizes, portrait and landscape, gray, palette, RGBA, gray+alpha,
      16-bit, 1-bit, interlaced, progressive and 4:4:4/4:2:2 JPEGs, 1x1,
      images smaller than the resize (upscaling), a 3-pixel-wide strip) and
      (in HOSTILE_DIR) the hostile files of the error tests.
  image_reference.py check NPY LIST NORM LAYOUT RESIZE CROP
      compares crossbind's array NPY and its list LIST (--list) with
      Image.open(f).convert("RGB") -> Resize(RESIZE) -> CenterCrop(CROP) and
      then: torchvision ToTensor + Normalize (NORM torchvision), ToTensor
      alone (none: the uint8 values must be identical), or Keras' formulas in
      NumPy on the same uint8 image (tf: x / 127.5 - 1; caffe: BGR, x - mean).
      Also the list: order, sizes and SHA-256 of every file.

Tolerance: every value must satisfy |a - r| <= 1e-6 (absolute; the values
lie in [-2.2, 2.7] for torchvision, [-1, 1] for tf, [-124, 152] for caffe,
where 1e-6 is below one float32 ulp of most values, so in practice this
asks for bit-identical output) and the uint8 image after resizing and
cropping must be identical to Pillow's. Both hold exactly today: crossbind
follows Pillow's fixed-point resampling step for step and does the float32
operations of ToTensor/Normalize (and Keras') in their order, and Debian's
libjpeg-turbo 2.1.5 decodes JPEGs to the same bytes as the libjpeg-turbo
3.x bundled with Pillow (integer IDCT and fancy upsampling are exact
integer algorithms in both). The script prints the measured maxima."""
import hashlib
import io
import json
import os
import struct
import sys
import warnings
import zlib

import numpy as np
from PIL import Image

# Pillow asks for palette images with transparency to be converted to RGBA;
# the pipeline converts to RGB (alpha dropped) on purpose.
warnings.filterwarnings("ignore", message="Palette images with Transparency")


def png_raw(w, h, color_type, depth, rows, plte=None, trns=None, interlace=0):
    """A PNG from raw filtered scanline bytes (Pillow writes no 16-bit colour PNG)."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    s = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, interlace))
    if plte:
        s += chunk(b"PLTE", plte)
    if trns:
        s += chunk(b"tRNS", trns)
    return s + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def rows_of(a):
    """Unfiltered scanlines (filter byte 0) of a big-endian sample array [h, w, c]."""
    return b"".join(b"\0" + a[y].tobytes() for y in range(a.shape[0]))


def adam7_rows(a):
    """Adam7-interlaced scanlines of a uint8 array [h, w, c]."""
    out = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                           (0, 1, 1, 2)):
        sub = a[y0::dy, x0::dx]
        if sub.shape[0] and sub.shape[1]:
            out += rows_of(np.ascontiguousarray(sub))
    return out


def photo(w, h, c, seed):
    """Smooth gradients plus noise: resampling of both edges and texture counts."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 255 // max(w - 1, 1)), (yy * 255 // max(h - 1, 1)), ((xx + yy) * 7) % 256,
                     ((xx * yy) % 251)], -1)[..., :c]
    return np.clip(base + rng.integers(-40, 41, (h, w, c)), 0, 255).astype(np.uint8)


def gen(d):
    os.makedirs(d, exist_ok=True)
    Image.fromarray(photo(333, 257, 3, 1)).save(f"{d}/a_landscape_333x257.png")
    Image.fromarray(photo(257, 401, 3, 2)).save(f"{d}/b_portrait_257x401.jpg", quality=90)
    Image.fromarray(photo(300, 199, 1, 3)[..., 0]).save(f"{d}/c_gray_300x199.png")
    pal = Image.fromarray(photo(270, 280, 3, 4)).quantize(200)
    pal.info["transparency"] = bytes([0, 128, 255])
    pal.save(f"{d}/d_palette_270x280.png", transparency=bytes([0, 128, 255]))
    Image.fromarray(photo(260, 300, 4, 5)).save(f"{d}/e_rgba_260x300.png")
    Image.fromarray(photo(261, 270, 2, 6)).save(f"{d}/f_la_261x270.png")
    rng = np.random.default_rng(7)
    rgb16 = rng.integers(0, 65536, (264, 280, 3)).astype(">u2")
    open(f"{d}/g_rgb16_280x264.png", "wb").write(png_raw(280, 264, 2, 16, rows_of(rgb16)))
    # 16-bit gray: values up to 600, so that Pillow's clipping to 255 shows.
    g16 = rng.integers(0, 600, (300, 270, 1)).astype(">u2")
    open(f"{d}/h_gray16_270x300.png", "wb").write(png_raw(270, 300, 0, 16, rows_of(g16)))
    Image.fromarray(np.array([[[200, 30, 90]]], np.uint8)).save(f"{d}/i_1x1.png")
    Image.fromarray(photo(100, 60, 3, 8)).save(f"{d}/j_small_100x60.jpg", quality=85)
    Image.fromarray(photo(200, 200, 3, 9)).save(f"{d}/k_small_200x200.png")
    Image.fromarray(photo(310, 290, 1, 10)[..., 0]).save(f"{d}/l_gray_310x290.jpg", quality=80)
    Image.fromarray(photo(300, 333, 3, 11)).save(f"{d}/m_progressive444_300x333.jpg", quality=95, progressive=True,
                                                 subsampling=0)
    Image.fromarray(photo(350, 260, 3, 12)).save(f"{d}/n_422_350x260.jpg", quality=75, subsampling=1)
    Image.fromarray(photo(3, 700, 3, 13)).save(f"{d}/o_strip_3x700.png")
    Image.fromarray(photo(259, 300, 1, 14)[..., 0] > 128).save(f"{d}/p_1bit_259x300.png")
    open(f"{d}/q_interlaced_67x45.png", "wb").write(png_raw(67, 45, 2, 8, adam7_rows(photo(67, 45, 3, 15)),
                                                            interlace=1))
    Image.fromarray(photo(90, 70, 3, 16)).quantize(16).save(f"{d}/r_palette4bit_90x70.png", bits=4)
    rgba16 = rng.integers(0, 65536, (50, 40, 4)).astype(">u2")
    open(f"{d}/s_rgba16_40x50.png", "wb").write(png_raw(40, 50, 6, 16, rows_of(rgba16)))
    open(f"{d}/notes.txt", "w").write("not an image; the directory listing skips it\n")


def hostile(d):
    """The error tests' files."""
    os.makedirs(d, exist_ok=True)
    open(f"{d}/empty.png", "wb").close()
    open(f"{d}/x.jpg", "w").write("a text file with an image's name\n")
    # IHDR declares 100000 x 100000 (10^10 pixels); the data is tiny.
    open(f"{d}/huge.png", "wb").write(png_raw(100000, 100000, 2, 8, b"\0" * 301))
    good = io.BytesIO()
    Image.fromarray(photo(300, 300, 3, 20)).save(good, "PNG")
    open(f"{d}/cut.png", "wb").write(good.getvalue()[: len(good.getvalue()) // 2])
    Image.fromarray(photo(64, 64, 4, 21)[..., :3]).convert("CMYK").save(f"{d}/cmyk.jpg")
    open(f"{d}/junk.jpg", "wb").write(b"\xff\xd8\xff" + bytes(range(256)) * 4)
    # A 1 x 4000 strip: fine to decode, too large when its shorter side becomes 16384.
    Image.fromarray(photo(1, 4000, 3, 22)).save(f"{d}/strip_1x4000.png")


def reference(path, norm, resize, crop):
    import torchvision.transforms as T
    im = Image.open(path).convert("RGB")
    u8 = np.asarray(T.CenterCrop(crop)(T.Resize(resize)(im)))  # [crop, crop, 3]
    if norm == "torchvision":
        t = T.Compose([T.Resize(resize), T.CenterCrop(crop), T.ToTensor(),
                       T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
        r = t(im).numpy().transpose(1, 2, 0)
    elif norm == "none":
        r = T.ToTensor()(T.CenterCrop(crop)(T.Resize(resize)(im))).numpy().transpose(1, 2, 0)
    elif norm == "tf":  # keras.applications.imagenet_utils.preprocess_input, mode 'tf'
        r = u8.astype(np.float32) / np.float32(127.5) - np.float32(1.0)
    elif norm == "caffe":  # mode 'caffe': RGB -> BGR, minus the BGR means, no scaling
        r = u8[..., ::-1].astype(np.float32) - np.array([103.939, 116.779, 123.68], np.float32)
    elif norm == "pixels":  # Keras' MobileNetV3 and EfficientNet scale the pixels inside the model
        r = u8.astype(np.float32)
    else:
        raise SystemExit(f"unknown norm {norm}")
    return u8, r.astype(np.float32), im.size


def check(npy, listing, norm, layout, resize, crop):
    x = np.load(npy)
    meta = json.load(open(listing))
    files = meta["files"]
    ok = True
    n = len(files)
    want_shape = (n, 3, crop, crop) if layout == "nchw" else (n, crop, crop, 3)
    if x.shape != want_shape or x.dtype != np.float32:
        print(f"shape {x.shape} {x.dtype}, expected {want_shape} float32")
        return False
    p = meta["pipeline"]
    if (p["resize"], p["crop"], p["norm"], p["layout"]) != (resize, crop, norm, layout) or meta["count"] != n:
        print(f"the list records {p}, not the run's parameters")
        ok = False
    worst = 0.0
    for i, f in enumerate(files):
        u8, r, size = reference(f["path"], norm, resize, crop)
        a = x[i] if layout == "nhwc" else x[i].transpose(1, 2, 0)
        data = open(f["path"], "rb").read()
        if (f["width"], f["height"]) != size or f["sha256"] != hashlib.sha256(data).hexdigest() \
                or f["bytes"] != len(data):
            print(f"{f['path']}: list says {f['width']}x{f['height']} {f['sha256']}, file is {size}")
            ok = False
        if norm == "none":
            got8 = np.rint(a.astype(np.float64) * 255)
            bad = int((got8 != u8).sum())
            if bad:
                print(f"{f['path']}: {bad} uint8 values differ from Pillow's (max "
                      f"{int(np.abs(got8 - u8).max())})")
                ok = False
        err = np.abs(a.astype(np.float64) - r.astype(np.float64))
        m = float(err.max())
        worst = max(worst, m)
        if not np.isfinite(a).all() or m > 1e-6:
            idx = np.unravel_index(int(err.argmax()), err.shape)
            print(f"{f['path']}: max abs error {m:.3g} at (y, x, c) {idx}: crossbind {a[idx]}, reference {r[idx]}")
            ok = False
    print(f"{n} images, {norm}/{layout}, resize {resize}, crop {crop}: max abs error {worst:.3g}"
          f"{' (bit-identical)' if worst == 0 else ''}")
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
        hostile(sys.argv[3])
    elif sys.argv[1] == "check":
        npy, listing, norm, layout, resize, crop = sys.argv[2:8]
        sys.exit(0 if check(npy, listing, norm, layout, int(resize), int(crop)) else 1)
    else:
        raise SystemExit(__doc__)
