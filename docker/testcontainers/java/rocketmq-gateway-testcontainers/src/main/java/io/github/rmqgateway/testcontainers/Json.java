package io.github.rmqgateway.testcontainers;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the control endpoint speaks, read and written without a JSON library (so the
 * module adds no version of Jackson or Gson to a project's test classpath). Objects become
 * {@link LinkedHashMap}s, arrays {@link ArrayList}s, integers {@link Long}s, other numbers
 * {@link Double}s.
 */
final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** The value of a whole JSON document; throws {@link IllegalArgumentException} on bad input. */
    static Object parse(String text) {
        Json json = new Json(text);
        Object value = json.value();
        json.skipSpace();
        if (json.at != text.length()) {
            throw json.error("trailing characters");
        }
        return value;
    }

    /** A JSON string literal of {@code s}. */
    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    /** A JSON object of string keys and string, number, boolean or null values, in map order. */
    static String object(Map<String, ?> fields) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, ?> field : fields.entrySet()) {
            if (out.length() > 1) {
                out.append(',');
            }
            Object v = field.getValue();
            out.append(quote(field.getKey())).append(':');
            out.append(v == null || v instanceof Number || v instanceof Boolean ? String.valueOf(v) : quote(v.toString()));
        }
        return out.append('}').toString();
    }

    private Object value() {
        skipSpace();
        if (at >= text.length()) {
            throw error("unexpected end");
        }
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                return number();
        }
    }

    private Map<String, Object> object() {
        Map<String, Object> out = new LinkedHashMap<>();
        at++;
        skipSpace();
        if (take('}')) {
            return out;
        }
        do {
            skipSpace();
            if (at >= text.length() || text.charAt(at) != '"') {
                throw error("expected a key");
            }
            String key = string();
            skipSpace();
            expect(':');
            out.put(key, value());
            skipSpace();
        } while (take(','));
        expect('}');
        return out;
    }

    private List<Object> array() {
        List<Object> out = new ArrayList<>();
        at++;
        skipSpace();
        if (take(']')) {
            return out;
        }
        do {
            out.add(value());
            skipSpace();
        } while (take(','));
        expect(']');
        return out;
    }

    private String string() {
        StringBuilder out = new StringBuilder();
        at++;
        while (at < text.length()) {
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (at >= text.length()) {
                break;
            }
            char e = text.charAt(at++);
            switch (e) {
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                }
                default -> out.append(e);
            }
        }
        throw error("unterminated string");
    }

    private Object number() {
        int start = at;
        while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
            at++;
        }
        String digits = text.substring(start, at);
        if (digits.isEmpty()) {
            throw error("unexpected character");
        }
        try {
            if (digits.matches("-?\\d+")) {
                return Long.parseLong(digits);
            }
            return Double.parseDouble(digits);
        } catch (NumberFormatException e) {
            throw error("bad number " + digits);
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error("unexpected character");
        }
        at += word.length();
        return value;
    }

    private void skipSpace() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private boolean take(char c) {
        if (at < text.length() && text.charAt(at) == c) {
            at++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!take(c)) {
            throw error("expected '" + c + "'");
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("bad JSON from the control endpoint at " + at + ": " + what);
    }
}
