package crossbind.common;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

/** safetensors: an 8-byte little-endian header length, a JSON header, raw little-endian data. */
public final class Safetensors {
    private Safetensors() {}

    /** One tensor: dtype F32 or I64, its shape and values (floats, or longs for I64). */
    public static final class Tensor {
        public final String dtype;
        public final long[] shape;
        public final float[] floats;
        public final long[] longs;

        public Tensor(long[] shape, float[] floats) {
            this("F32", shape, floats, null);
        }

        public Tensor(long[] shape, long[] longs) {
            this("I64", shape, null, longs);
        }

        private Tensor(String dtype, long[] shape, float[] floats, long[] longs) {
            this.dtype = dtype;
            this.shape = shape;
            this.floats = floats;
            this.longs = longs;
        }
    }

    public static Map<String, Tensor> read(Path path) throws IOException {
        byte[] blob = Files.readAllBytes(path);
        if (blob.length < 8) {
            throw new IOException(path + ": too short to be a safetensors file");
        }
        ByteBuffer bb = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        long hlen = bb.getLong(0);
        if (hlen < 0 || hlen > blob.length - 8) {
            throw new IOException(path + ": header length " + hlen + " exceeds the file (truncated?)");
        }
        JsonObject header;
        try {
            header = JsonParser.parseString(new String(blob, 8, (int) hlen, StandardCharsets.UTF_8)).getAsJsonObject();
        } catch (RuntimeException e) {
            throw new IOException(path + ": unreadable safetensors header: " + e.getMessage(), e);
        }
        int base = 8 + (int) hlen;
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> e : header.entrySet()) {
            if (e.getKey().equals("__metadata__")) {
                continue;
            }
            try {
                JsonObject t = e.getValue().getAsJsonObject();
                String dtype = t.get("dtype").getAsString();
                long[] shape = new long[t.getAsJsonArray("shape").size()];
                long count = 1;
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = t.getAsJsonArray("shape").get(i).getAsLong();
                    count *= shape[i];
                }
                long begin = t.getAsJsonArray("data_offsets").get(0).getAsLong();
                long end = t.getAsJsonArray("data_offsets").get(1).getAsLong();
                int size = "F32".equals(dtype) || "I32".equals(dtype) ? 4 : "F64".equals(dtype) || "I64".equals(dtype) ? 8 : 0;
                if (size == 0) {
                    throw new IOException(path + ": tensor " + e.getKey() + " has unsupported dtype " + dtype);
                }
                if (begin < 0 || end > blob.length - base || end - begin != count * size) {
                    throw new IOException(path + ": tensor " + e.getKey() + " lies outside the file or mismatches its shape");
                }
                ByteBuffer data = ByteBuffer.wrap(blob, base + (int) begin, (int) (end - begin)).slice()
                        .order(ByteOrder.LITTLE_ENDIAN);
                if ("F32".equals(dtype) || "F64".equals(dtype)) {
                    float[] v = new float[(int) count];
                    for (int i = 0; i < v.length; i++) {
                        v[i] = size == 4 ? data.getFloat(4 * i) : (float) data.getDouble(8 * i);
                    }
                    out.put(e.getKey(), new Tensor(shape, v));
                } else {
                    long[] v = new long[(int) count];
                    for (int i = 0; i < v.length; i++) {
                        v[i] = size == 4 ? data.getInt(4 * i) : data.getLong(8 * i);
                    }
                    out.put(e.getKey(), new Tensor(shape, v));
                }
            } catch (IOException ex) {
                throw ex;
            } catch (RuntimeException ex) {
                throw new IOException(path + ": malformed header entry for " + e.getKey(), ex);
            }
        }
        return out;
    }

    /** Writes the tensors in the given order, atomically. */
    public static void write(Path path, Map<String, Tensor> tensors, Map<String, String> metadata) throws IOException {
        JsonObject header = new JsonObject();
        JsonObject meta = new JsonObject();
        metadata.forEach(meta::addProperty);
        header.add("__metadata__", meta);
        long offset = 0;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            Tensor t = e.getValue();
            long bytes = 8L * (t.longs != null ? t.longs.length : 0) + 4L * (t.floats != null ? t.floats.length : 0);
            JsonObject entry = new JsonObject();
            entry.addProperty("dtype", t.dtype);
            com.google.gson.JsonArray shape = new com.google.gson.JsonArray();
            for (long d : t.shape) {
                shape.add(d);
            }
            entry.add("shape", shape);
            com.google.gson.JsonArray offs = new com.google.gson.JsonArray();
            offs.add(offset);
            offs.add(offset + bytes);
            entry.add("data_offsets", offs);
            header.add(e.getKey(), entry);
            offset += bytes;
        }
        byte[] h = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (h.length + 7) / 8 * 8;
        ByteBuffer bb = ByteBuffer.allocate(8 + padded + (int) offset).order(ByteOrder.LITTLE_ENDIAN);
        bb.putLong(padded).put(h);
        for (int i = h.length; i < padded; i++) {
            bb.put((byte) ' ');
        }
        for (Tensor t : tensors.values()) {
            if (t.floats != null) {
                for (float f : t.floats) {
                    bb.putFloat(f);
                }
            } else {
                for (long l : t.longs) {
                    bb.putLong(l);
                }
            }
        }
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (OutputStream out = Files.newOutputStream(tmp)) {
            out.write(bb.array());
        }
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
