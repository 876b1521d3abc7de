package crossbind.common;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** NumPy .npy files: little-endian int64 arrays read (the prepared IMDb data), float32 written (logits). */
public final class Npy {
    private static final Pattern DESCR = Pattern.compile("'descr':\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order':\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape':\\s*\\(([^)]*)\\)");

    private Npy() {}

    /** An int64 array: its shape and values. */
    public static final class Longs {
        public long[] shape;
        public long[] values;
    }

    public static Longs readInt64(Path path) throws IOException {
        if (!Files.exists(path)) {
            throw new IOException("cannot open " + path);
        }
        byte[] blob = Files.readAllBytes(path);
        if (blob.length < 10 || (blob[0] & 0xff) != 0x93 || blob[1] != 'N' || blob[2] != 'U') {
            throw new IOException(path + ": not a .npy file");
        }
        int major = blob[6];
        ByteBuffer bb = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        int hlen;
        int start;
        if (major == 1) {
            hlen = bb.getShort(8) & 0xffff;
            start = 10;
        } else {
            hlen = bb.getInt(8);
            start = 12;
        }
        if (hlen < 0 || start + hlen > blob.length) {
            throw new IOException(path + ": truncated .npy header");
        }
        String header = new String(blob, start, hlen, StandardCharsets.ISO_8859_1);
        Matcher d = DESCR.matcher(header);
        Matcher f = FORTRAN.matcher(header);
        Matcher s = SHAPE.matcher(header);
        if (!d.find() || !f.find() || !s.find()) {
            throw new IOException(path + ": unreadable .npy header");
        }
        if (!d.group(1).equals("<i8") || f.group(1).equals("True")) {
            throw new IOException(path + ": expected a C-order int64 array, found dtype " + d.group(1));
        }
        String[] dims = s.group(1).split(",");
        int nd = 0;
        long[] shape = new long[dims.length];
        long count = 1;
        for (String dim : dims) {
            if (!dim.isBlank()) {
                shape[nd] = Long.parseLong(dim.trim());
                count *= shape[nd++];
            }
        }
        Longs out = new Longs();
        out.shape = java.util.Arrays.copyOf(shape, nd);
        int data = start + hlen;
        if (blob.length - data != count * 8) {
            throw new IOException(path + ": header promises " + count + " values, file has "
                    + (blob.length - data) / 8);
        }
        out.values = new long[(int) count];
        bb.position(data);
        bb.asLongBuffer().get(out.values);
        return out;
    }

    /** Writes float32 [rows, cols] atomically. */
    public static void writeFloat32(Path path, float[] values, int rows, int cols) throws IOException {
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + rows + ", " + cols + "), }";
        int pad = 64 - (10 + dict.length() + 1) % 64;
        StringBuilder h = new StringBuilder(dict);
        h.append(" ".repeat(pad % 64)).append('\n');
        byte[] header = h.toString().getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer bb = ByteBuffer.allocate(10 + header.length + values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        bb.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.ISO_8859_1)).put((byte) 1).put((byte) 0);
        bb.putShort((short) header.length).put(header);
        bb.asFloatBuffer().put(values);
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (OutputStream out = Files.newOutputStream(tmp)) {
            out.write(bb.array());
        }
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
