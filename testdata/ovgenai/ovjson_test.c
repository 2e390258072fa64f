/*
 * The test library's small JSON scanner (no JSON library): what reading a
 * model folder's tokenizer.json (ovbpe_test.c) and generation_config.json
 * needs, bounded in nesting; the caller bounds the text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovjson_test.h"
#include "ovtest.h"

#define MAX_DEPTH 64

/* ---- UTF-8 ---- */

/* ovjson_utf8_next decodes the code point at s (n bytes left) and sets its length;
 * an invalid byte is a code point of its own (U+FFFD's class: other). */
uint32_t ovjson_utf8_next(const unsigned char* s, size_t n, size_t* len) {
    unsigned char c = s[0];
    size_t need = c < 0x80 ? 0 : c >= 0xF8 ? 9 : c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : 9;
    if (need == 0 || need == 9 || need >= n) {
        *len = 1;
        return need == 0 ? c : 0xFFFD;
    }
    uint32_t cp = c & (0x3F >> need);
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = need + 1;
    return cp;
}

size_t ovjson_utf8_put(uint32_t cp, char* out) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- the scanner ---- */

int ovjson_fail(struct ovjson* s, const char* what) {
    if (!s->failed) {
        s->failed = 1;
        s->what = what;
    }
    return 0;
}

void ovjson_ws(struct ovjson* s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

int ovjson_peek(struct ovjson* s) {
    ovjson_ws(s);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

int ovjson_eat(struct ovjson* s, char c) {
    if (ovjson_peek(s) != c) return ovjson_fail(s, "unexpected character");
    s->p++;
    return 1;
}

int ovjson_literal(struct ovjson* s, const char* word) {
    size_t n = strlen(word);
    ovjson_ws(s);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return ovjson_fail(s, "unexpected word");
    s->p += n;
    return 1;
}

static int hex4(const char* p, uint32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* string reads a JSON string, its escapes decoded into a new buffer
 * (out NULL: skipped). A decoded string is never longer than its source. */
int ovjson_string(struct ovjson* s, char** out, size_t* len) {
    if (!ovjson_eat(s, '"')) return 0;
    const char* start = s->p;
    char* buf = NULL;
    size_t n = 0;
    if (out) {
        const char* q = start;
        while (q < s->end && *q != '"') q += *q == '\\' && q + 1 < s->end ? 2 : 1;
        buf = malloc((size_t)(q - start) + 1);
        if (!buf) return ovjson_fail(s, "out of memory");
    }
    while (s->p < s->end && *s->p != '"') {
        char c = *s->p++;
        if ((unsigned char)c < 0x20) {
            free(buf);
            return ovjson_fail(s, "a control character in a string");
        }
        if (c != '\\') {
            if (buf) buf[n++] = c;
            continue;
        }
        if (s->p >= s->end) break;
        char e = *s->p++;
        uint32_t cp;
        switch (e) {
        case '"': case '\\': case '/': cp = (uint32_t)e; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (s->end - s->p < 4 || !hex4(s->p, &cp)) {
                free(buf);
                return ovjson_fail(s, "a bad \\u escape");
            }
            s->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                uint32_t lo;
                if (s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u' && hex4(s->p + 2, &lo) && lo >= 0xDC00 &&
                    lo < 0xE000) {
                    s->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            break;
        default:
            free(buf);
            return ovjson_fail(s, "a bad escape");
        }
        if (buf) n += ovjson_utf8_put(cp, buf + n); /* \uXXXX (6 bytes) is at most 3; a pair (12) at most 4 */
    }
    if (s->p >= s->end) {
        free(buf);
        return ovjson_fail(s, "a string does not end");
    }
    s->p++;
    if (out) {
        buf[n] = 0;
        *out = buf;
        *len = n;
    }
    return 1;
}

int ovjson_number(struct ovjson* s, long long* out) {
    ovjson_ws(s);
    char tmp[32];
    size_t n = 0;
    while (s->p < s->end && n < sizeof tmp - 1 && strchr("+-0123456789.eE", *s->p)) tmp[n++] = *s->p++;
    tmp[n] = 0;
    char* end;
    long long v = strtoll(tmp, &end, 10);
    if (n == 0 || *end) return ovjson_fail(s, "not an integer");
    *out = v;
    return 1;
}


/* next_member reads the next key of an object (after '{' was eaten; first
 * set for the first member) and its ':'; 0 at the object's end. */
int ovjson_next_member(struct ovjson* s, int* first, char** key, size_t* klen) {
    int c = ovjson_peek(s);
    if (c == '}') {
        s->p++;
        return 0;
    }
    if (!*first && !ovjson_eat(s, ',')) return 0;
    *first = 0;
    if (!ovjson_string(s, key, klen)) return 0;
    if (ovjson_eat(s, ':')) return 1;
    if (key) { /* the caller frees a key only when it gets one */
        free(*key);
        *key = NULL;
    }
    return 0;
}

int ovjson_next_element(struct ovjson* s, int* first) {
    int c = ovjson_peek(s);
    if (c == ']') {
        s->p++;
        return 0;
    }
    if (!*first && !ovjson_eat(s, ',')) return 0;
    *first = 0;
    return 1;
}

int ovjson_skip_value(struct ovjson* s) {
    int c = ovjson_peek(s);
    if (c == '"') return ovjson_string(s, NULL, NULL);
    if (c == '{' || c == '[') {
        if (++s->depth > MAX_DEPTH) return ovjson_fail(s, "nested too deep");
        s->p++;
        int first = 1;
        if (c == '{') {
            while (ovjson_next_member(s, &first, NULL, NULL))
                if (!ovjson_skip_value(s)) return 0;
        } else {
            while (ovjson_next_element(s, &first))
                if (!ovjson_skip_value(s)) return 0;
        }
        s->depth--;
        return !s->failed;
    }
    if (c == 't') return ovjson_literal(s, "true");
    if (c == 'f') return ovjson_literal(s, "false");
    if (c == 'n') return ovjson_literal(s, "null");
    long long ignored;
    return ovjson_number(s, &ignored);
}

/* string_value reads a string member's value; anything else is skipped
 * and gives NULL. */
char* ovjson_string_value(struct ovjson* s) {
    if (ovjson_peek(s) != '"') {
        ovjson_skip_value(s);
        return NULL;
    }
    char* v = NULL;
    size_t n;
    return ovjson_string(s, &v, &n) ? v : NULL;
}

int ovjson_bool_value(struct ovjson* s, int def) {
    int c = ovjson_peek(s);
    if (c == 't') return ovjson_literal(s, "true") ? 1 : def;
    if (c == 'f') return ovjson_literal(s, "false") ? 0 : def;
    ovjson_skip_value(s);
    return def;
}

int ovjson_is_null(struct ovjson* s) {
    if (ovjson_peek(s) != 'n') return 0;
    return ovjson_literal(s, "null");
}

/* key_is compares a member's key. */
int ovjson_key_is(const char* key, const char* name) { return key && strcmp(key, name) == 0; }

/* ---- other small JSON files ---- */

int ovtest_json_sizes(const char* path, const char* const* keys, size_t* values, size_t n) {
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    const size_t max = 1 << 20;
    char* buf = malloc(max + 1);
    size_t len = buf ? fread(buf, 1, max + 1, f) : 0;
    fclose(f);
    if (!buf || len > max) {
        free(buf);
        return -1;
    }
    struct ovjson s = {.p = buf, .end = buf + len};
    int first = 1;
    char* key = NULL;
    size_t klen;
    if (ovjson_eat(&s, '{')) {
        while (ovjson_next_member(&s, &first, &key, &klen)) {
            size_t i = 0;
            while (i < n && strcmp(key, keys[i]) != 0) i++;
            int c = ovjson_peek(&s);
            if (i < n && c >= '0' && c <= '9') {
                long long v;
                if (ovjson_number(&s, &v) && v >= 0) values[i] = (size_t)v;
            } else {
                ovjson_skip_value(&s);
            }
            free(key);
            key = NULL;
            if (s.failed) break;
        }
        if (!s.failed && ovjson_peek(&s) != -1) ovjson_fail(&s, "text after the object");
    }
    free(buf);
    return s.failed ? -1 : 0;
}
