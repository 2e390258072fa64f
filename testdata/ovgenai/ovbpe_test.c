/*
 * The test library's byte-level BPE tokenizer: what a model folder's
 * tokenizer.json says, applied as Hugging Face's tokenizers and
 * openvino-tokenizers' converted IR apply it, for the models whose
 * tokenizer.json has a BPE model, a ByteLevel pre-tokenizer (with its
 * regex) and no normalizer (GPT-2's shape; the project's tiny model).
 * Both the test core's tokenizer IR and the test GenAI count with it, so
 * the test library sees the prompt sizes a real model does.
 *
 * Encoding a text:
 *   1. the added tokens (special or not: both are atomic) are found first,
 *      leftmost, and the longest at a position;
 *   2. the rest is split with GPT-2's pattern
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      (written out by hand in next_piece);
 *   3. each piece's bytes are merged by rank (the lowest-ranked adjacent
 *      pair first, the leftmost of equal ones) over the vocabulary's byte
 *      strings: the vocabulary's keys are GPT-2's byte-to-unicode mapping
 *      of bytes, mapped back here once, so merging works on raw bytes.
 *
 * tokenizer.json is read with the test library's small scanner
 * (ovjson_test.c, no JSON library), bounded
 * in size and nesting, once per model or pipeline; the result is immutable
 * and shared by reference count, so tokenizing is thread-safe.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovjson_test.h"
#include "ovtest.h"

/* A real tokenizer.json is some 10 MB (Qwen's 11 MB); anything past this
 * is refused rather than read. */
#define MAX_TOKENIZER_JSON (64u << 20)
#define MAX_ADDED 4096
/* Ids are indexes of a table: a real vocabulary has some 150 000. */
#define MAX_ID (1 << 24)

struct strmap_entry {
    uint32_t off, len; /* in the vocab's arena */
    int64_t id;
};

struct merge_entry {
    uint64_t pair; /* left id << 32 | right id; 0 with rank UINT32_MAX: empty */
    uint32_t rank;
    int64_t merged;
};

struct added {
    char* text;
    size_t len;
    int64_t id;
    int special; /* dropped from decoded text (skip_special_tokens) */
};

struct ovtest_vocab {
    atomic_int refs;
    /* the BPE vocabulary, by byte string */
    char* arena;
    size_t arena_len, arena_cap;
    struct strmap_entry* entries;
    size_t nentries, entries_cap;
    uint32_t* slots; /* index + 1 into entries; 0: empty */
    size_t nslots;   /* a power of two */
    int64_t byte_id[256]; /* each byte's own token; -1: none */
    struct merge_entry* merges;
    size_t nmerge_slots; /* a power of two */
    struct added* added;
    size_t nadded;
    unsigned char added_first[256]; /* an added token starts with this byte */
    /* each id's text, for decoding: an index + 1 into entries, or -(index
     * + 1) into added; 0: no such id */
    int64_t* by_id;
    size_t nids;
    int ignore_merges;    /* a whole piece in the vocabulary is one token */
    int add_prefix_space; /* the ByteLevel pre-tokenizer's */
};

/* ---- GPT-2's byte-to-unicode map (bytes_to_unicode) ---- */

/* printable: the bytes GPT-2 maps to the code point of the same value. */
static int printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

/* unicode_to_byte maps a code point of a vocabulary key back to its byte;
 * -1: not one GPT-2's map produces. */
static int unicode_to_byte(uint32_t cp) {
    if (cp < 256 && printable((int)cp)) return (int)cp;
    if (cp < 256 || cp >= 256 + 68) return -1;
    /* The 68 others, in byte order, from U+0100: 0x00-0x20, 0x7F-0xA0, 0xAD. */
    uint32_t n = cp - 256;
    return n < 33 ? (int)n : n < 67 ? (int)(0x7F + n - 33) : 0xAD;
}

/* ---- character classes of the split pattern ----
 *
 * ASCII is exact. Above it Unicode's White_Space is exact; \p{N} and \p{L}
 * are APPROXIMATED by ranges, not Unicode's tables: numbers are the
 * superscripts, vulgar fractions, the decimal digits of Arabic, Devanagari
 * to Malayalam, Thai, Lao and fullwidth forms, and the number forms and
 * enclosed numbers; letters are Latin-1's and Latin Extended's letters
 * (ª µ º, À-ÿ but × ÷), U+0100-U+02FF, and every code point from U+0370 to
 * U+1FFF, from U+2C00 to U+2DFF, from U+3040 to U+9FFF, Hangul, the CJK
 * compatibility ideographs, the fullwidth Latin letters and halfwidth
 * kana, and planes 2 and 3, except the combining marks U+0300-U+036F,
 * U+0483-U+0489 and U+0591-U+05C7; everything else (punctuation, symbols,
 * marks, emoji, U+2000-U+2BFF, CJK punctuation U+3000-U+303F) is neither.
 * So a text of Latin, Greek, Cyrillic, CJK, kana or Hangul letters, common
 * punctuation and emoji splits as the real tokenizer splits it; rarer
 * scripts' marks, digits and punctuation may not. */
static int is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static int is_number(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    if (c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0xBC && c <= 0xBE)) return 1;
    if ((c >= 0x660 && c <= 0x669) || (c >= 0x6F0 && c <= 0x6F9)) return 1;
    if (c >= 0x966 && c <= 0xD6F && (c & 0x7F) >= 0x66 && (c & 0x7F) <= 0x6F) return 1; /* Indic digit rows */
    if ((c >= 0xE50 && c <= 0xE59) || (c >= 0xED0 && c <= 0xED9)) return 1;
    if (c == 0x2070 || (c >= 0x2074 && c <= 0x2079) || (c >= 0x2080 && c <= 0x2089)) return 1;
    if ((c >= 0x2150 && c <= 0x2189) || (c >= 0x2460 && c <= 0x249B) || (c >= 0x24EA && c <= 0x24FF)) return 1;
    if ((c >= 0x2776 && c <= 0x2793) || c == 0x3007 || (c >= 0x3021 && c <= 0x3029)) return 1;
    return c >= 0xFF10 && c <= 0xFF19;
}

static int is_letter(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (is_space(c) || is_number(c)) return 0;
    if (c == 0xAA || c == 0xB5 || c == 0xBA) return 1;
    if (c < 0xC0 || c == 0xD7 || c == 0xF7) return 0;
    if (c < 0x300) return 1;
    if (c <= 0x36F || (c >= 0x483 && c <= 0x489) || (c >= 0x591 && c <= 0x5C7)) return 0;
    if (c < 0x2000) return 1;
    if (c >= 0x2C00 && c <= 0x2DFF) return 1;
    if (c >= 0x3040 && c <= 0x9FFF) return c != 0x30FB; /* kana and CJK; ・ is punctuation */
    if ((c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF)) return 1;
    if ((c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A) || (c >= 0xFF66 && c <= 0xFF9F)) return 1;
    return c >= 0x20000 && c <= 0x3FFFF;
}

enum cls { C_LETTER, C_NUMBER, C_SPACE, C_OTHER };

static enum cls class_at(const unsigned char* s, size_t n, size_t* len) {
    uint32_t c = ovjson_utf8_next(s, n, len);
    return is_letter(c) ? C_LETTER : is_number(c) ? C_NUMBER : is_space(c) ? C_SPACE : C_OTHER;
}

/* run_of is how many bytes from s are characters of class k. */
static size_t run_of(const unsigned char* s, size_t n, enum cls k) {
    size_t at = 0, len;
    while (at < n && class_at(s + at, n - at, &len) == k) at += len;
    return at;
}

/* next_piece is the length of the pattern's match at s (n > 0 bytes):
 * the first alternative that matches, as a backtracking regex engine
 * takes it. */
static size_t next_piece(const unsigned char* s, size_t n) {
    if (s[0] == '\'' && n >= 2) {
        if (s[1] == 's' || s[1] == 't' || s[1] == 'm' || s[1] == 'd') return 2;
        if (n >= 3 && ((s[1] == 'r' && s[2] == 'e') || (s[1] == 'v' && s[2] == 'e') || (s[1] == 'l' && s[2] == 'l')))
            return 3;
    }
    /* " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then a run of one class. */
    size_t skip = s[0] == ' ' && n > 1 ? 1 : 0, len;
    for (int tries = 0; tries < 2; tries++) {
        enum cls k = class_at(s + skip, n - skip, &len);
        if (k != C_SPACE) return skip + run_of(s + skip, n - skip, k);
        if (!skip) break;
        skip = 0; /* the space itself is the run's start: whitespace below */
    }
    /* "\s+(?!\S)": the whitespace run, less its last character when
     * something else follows; "\s+" when that leaves nothing. */
    size_t run = run_of(s, n, C_SPACE);
    if (run == n) return run;
    size_t last = 0;
    for (size_t at = 0; at < run; at += len) {
        last = at;
        (void)class_at(s + at, n - at, &len);
    }
    return last > 0 ? last : run;
}

/* ---- the vocabulary's maps ---- */

static uint64_t hash_bytes(const char* s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t hash_pair(uint64_t pair) {
    pair ^= pair >> 33;
    pair *= 0xff51afd7ed558ccdULL;
    pair ^= pair >> 33;
    return pair;
}

static int64_t vocab_find(const struct ovtest_vocab* v, const char* s, size_t n) {
    if (!v->nslots) return -1;
    for (size_t i = hash_bytes(s, n) & (v->nslots - 1);; i = (i + 1) & (v->nslots - 1)) {
        uint32_t e = v->slots[i];
        if (!e) return -1;
        const struct strmap_entry* en = &v->entries[e - 1];
        if (en->len == n && memcmp(v->arena + en->off, s, n) == 0) return en->id;
    }
}

static int vocab_grow(struct ovtest_vocab* v) {
    size_t nslots = v->nslots ? v->nslots * 2 : 1024;
    uint32_t* slots = calloc(nslots, sizeof *slots);
    if (!slots) return 0;
    for (size_t e = 0; e < v->nentries; e++) {
        const struct strmap_entry* en = &v->entries[e];
        size_t i = hash_bytes(v->arena + en->off, en->len) & (nslots - 1);
        while (slots[i]) i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    free(v->slots);
    v->slots = slots;
    v->nslots = nslots;
    return 1;
}

/* vocab_put adds a byte string's id; the first one of a string stays. */
static int vocab_put(struct ovtest_vocab* v, const char* s, size_t n, int64_t id) {
    if (vocab_find(v, s, n) >= 0) return 1;
    if ((v->nentries + 1) * 2 > v->nslots && !vocab_grow(v)) return 0;
    if (v->nentries == v->entries_cap) {
        size_t cap = v->entries_cap ? v->entries_cap * 2 : 1024;
        struct strmap_entry* e = realloc(v->entries, cap * sizeof *e);
        if (!e) return 0;
        v->entries = e;
        v->entries_cap = cap;
    }
    if (v->arena_len + n > v->arena_cap) {
        size_t cap = (v->arena_len + n) * 2 + 4096;
        char* a = realloc(v->arena, cap);
        if (!a) return 0;
        v->arena = a;
        v->arena_cap = cap;
    }
    memcpy(v->arena + v->arena_len, s, n);
    v->entries[v->nentries] = (struct strmap_entry){.off = (uint32_t)v->arena_len, .len = (uint32_t)n, .id = id};
    v->arena_len += n;
    size_t i = hash_bytes(s, n) & (v->nslots - 1);
    while (v->slots[i]) i = (i + 1) & (v->nslots - 1);
    v->slots[i] = (uint32_t)(++v->nentries);
    return 1;
}

static const struct merge_entry* merge_find(const struct ovtest_vocab* v, int64_t a, int64_t b) {
    if (!v->nmerge_slots || a < 0 || b < 0) return NULL;
    uint64_t pair = (uint64_t)a << 32 | (uint64_t)b;
    for (size_t i = hash_pair(pair) & (v->nmerge_slots - 1);; i = (i + 1) & (v->nmerge_slots - 1)) {
        const struct merge_entry* m = &v->merges[i];
        if (m->rank == UINT32_MAX) return NULL;
        if (m->pair == pair) return m;
    }
}

/* ---- reading tokenizer.json ---- */

/* What the file says, before the vocabulary is built. */
struct parsed {
    int bpe, byte_level, use_regex, normalized, unsupported;
    char** merges; /* "left right", or left and right apart */
    size_t* merge_split; /* where right starts in merges[i] (after the separator) */
    size_t* merge_len;
    size_t nmerges, merges_cap;
};

/* decode_key maps a vocabulary key's code points back to bytes in place;
 * 0 when one of them is not GPT-2's map's. */
static int decode_key(char* key, size_t* len) {
    size_t in = 0, out = 0, l;
    while (in < *len) {
        uint32_t cp = ovjson_utf8_next((const unsigned char*)key + in, *len - in, &l);
        int b = unicode_to_byte(cp);
        if (b < 0) return 0;
        key[out++] = (char)b;
        in += l;
    }
    *len = out;
    return 1;
}

static int read_vocab(struct ovjson* s, struct ovtest_vocab* v) {
    if (ovjson_peek(s) != '{') return ovjson_skip_value(s); /* a Unigram's list: not a BPE */
    s->p++;
    int first = 1;
    char* key = NULL;
    size_t klen;
    while (ovjson_next_member(s, &first, &key, &klen)) {
        long long id;
        if (!ovjson_number(s, &id) || id < 0 || id >= MAX_ID) {
            free(key);
            return ovjson_fail(s, "a vocabulary id is not an integer from 0 to 2^24");
        }
        int ok = 1;
        if (decode_key(key, &klen)) ok = vocab_put(v, key, klen, id);
        free(key);
        key = NULL;
        if (!ok) return ovjson_fail(s, "out of memory");
    }
    return !s->failed;
}

static int add_merge(struct ovjson* s, struct parsed* p, char* text, size_t split, size_t len) {
    if (p->nmerges == p->merges_cap) {
        size_t cap = p->merges_cap ? p->merges_cap * 2 : 1024;
        char** m = realloc(p->merges, cap * sizeof *m);
        size_t* sp = m ? realloc(p->merge_split, cap * sizeof *sp) : NULL;
        if (sp) p->merge_split = sp;
        size_t* ln = sp ? realloc(p->merge_len, cap * sizeof *ln) : NULL;
        if (m) p->merges = m;
        if (!ln) {
            free(text);
            return ovjson_fail(s, "out of memory");
        }
        p->merge_len = ln;
        p->merges_cap = cap;
    }
    p->merges[p->nmerges] = text;
    p->merge_split[p->nmerges] = split;
    p->merge_len[p->nmerges++] = len;
    return 1;
}

/* read_merges takes "left right" strings (older files) or [left, right]
 * pairs (tokenizers 0.20 and later). */
static int read_merges(struct ovjson* s, struct parsed* p) {
    if (!ovjson_eat(s, '[')) return 0;
    int first = 1;
    while (ovjson_next_element(s, &first)) {
        char *text = NULL, *right = NULL;
        size_t len, rlen;
        if (ovjson_peek(s) == '"') {
            if (!ovjson_string(s, &text, &len)) return 0;
            char* sp = memchr(text, ' ', len);
            if (!sp) {
                free(text);
                return ovjson_fail(s, "a merge without a space");
            }
            if (!add_merge(s, p, text, (size_t)(sp - text) + 1, len)) return 0;
            continue;
        }
        int f2 = 1;
        if (!ovjson_eat(s, '[') || !ovjson_next_element(s, &f2) || !ovjson_string(s, &text, &len)) return ovjson_fail(s, "a merge is not a pair");
        if (!ovjson_next_element(s, &f2) || !ovjson_string(s, &right, &rlen) || ovjson_next_element(s, &f2)) {
            free(text);
            free(right);
            return ovjson_fail(s, "a merge is not a pair");
        }
        char* joined = malloc(len + 1 + rlen + 1);
        if (!joined) {
            free(text);
            free(right);
            return ovjson_fail(s, "out of memory");
        }
        memcpy(joined, text, len);
        joined[len] = ' ';
        memcpy(joined + len + 1, right, rlen + 1);
        free(text);
        free(right);
        if (!add_merge(s, p, joined, len + 1, len + 1 + rlen)) return 0;
    }
    return !s->failed;
}

static int read_model(struct ovjson* s, struct parsed* p, struct ovtest_vocab* v) {
    if (!ovjson_eat(s, '{')) return 0;
    int first = 1;
    char* key = NULL;
    size_t klen;
    while (ovjson_next_member(s, &first, &key, &klen)) {
        if (ovjson_key_is(key, "type")) {
            char* t = ovjson_string_value(s);
            p->bpe = t && strcmp(t, "BPE") == 0;
            free(t);
        } else if (ovjson_key_is(key, "vocab")) {
            read_vocab(s, v);
        } else if (ovjson_key_is(key, "merges")) {
            read_merges(s, p);
        } else if (ovjson_key_is(key, "ignore_merges")) {
            v->ignore_merges = ovjson_bool_value(s, 0);
        } else if (ovjson_key_is(key, "byte_fallback")) {
            p->unsupported |= ovjson_bool_value(s, 0);
        } else if (ovjson_key_is(key, "continuing_subword_prefix") || ovjson_key_is(key, "end_of_word_suffix") ||
                   ovjson_key_is(key, "dropout")) {
            if (!ovjson_is_null(s)) { /* a prefix, a suffix or dropout is not GPT-2's BPE */
                p->unsupported = 1;
                ovjson_skip_value(s);
            }
        } else {
            ovjson_skip_value(s);
        }
        free(key);
        key = NULL;
        if (s->failed) return 0;
    }
    return !s->failed;
}

static int read_pre_tokenizer(struct ovjson* s, struct parsed* p, struct ovtest_vocab* v) {
    if (ovjson_is_null(s)) return 1;
    if (ovjson_peek(s) != '{') return ovjson_skip_value(s);
    s->p++;
    int first = 1;
    char* key = NULL;
    size_t klen;
    p->use_regex = 1; /* ByteLevel's default */
    while (ovjson_next_member(s, &first, &key, &klen)) {
        if (ovjson_key_is(key, "type")) {
            char* t = ovjson_string_value(s);
            p->byte_level = t && strcmp(t, "ByteLevel") == 0;
            free(t);
        } else if (ovjson_key_is(key, "use_regex")) {
            p->use_regex = ovjson_bool_value(s, 1);
        } else if (ovjson_key_is(key, "add_prefix_space")) {
            v->add_prefix_space = ovjson_bool_value(s, 0);
        } else {
            ovjson_skip_value(s);
        }
        free(key);
        key = NULL;
        if (s->failed) return 0;
    }
    return !s->failed;
}

static int read_added(struct ovjson* s, struct ovtest_vocab* v) {
    if (!ovjson_eat(s, '[')) return 0;
    int first = 1;
    while (ovjson_next_element(s, &first)) {
        if (!ovjson_eat(s, '{')) return 0;
        int f2 = 1;
        char *key = NULL, *content = NULL;
        size_t klen, clen = 0;
        long long id = -1;
        int special = 0;
        while (ovjson_next_member(s, &f2, &key, &klen)) {
            if (ovjson_key_is(key, "id")) ovjson_number(s, &id);
            else if (ovjson_key_is(key, "special")) special = ovjson_bool_value(s, 0);
            else if (ovjson_key_is(key, "content") && !content) ovjson_string(s, &content, &clen);
            else ovjson_skip_value(s);
            free(key);
            key = NULL;
            if (s->failed) break;
        }
        if (s->failed || !content || clen == 0 || id < 0 || id >= MAX_ID || v->nadded == MAX_ADDED) {
            free(content);
            return ovjson_fail(s, "an added token without content and id");
        }
        v->added[v->nadded++] = (struct added){.text = content, .len = clen, .id = id, .special = special};
        v->added_first[(unsigned char)content[0]] = 1;
    }
    return !s->failed;
}

static int build_merges(struct ovtest_vocab* v, const struct parsed* p) {
    size_t slots = 1024;
    while (slots < p->nmerges * 2) slots *= 2;
    v->merges = malloc(slots * sizeof *v->merges);
    if (!v->merges) return 0;
    for (size_t i = 0; i < slots; i++) v->merges[i] = (struct merge_entry){.rank = UINT32_MAX};
    v->nmerge_slots = slots;
    for (size_t r = 0; r < p->nmerges; r++) {
        char* m = p->merges[r];
        size_t split = p->merge_split[r], len = p->merge_len[r];
        size_t llen = split - 1, rlen = len - split;
        /* left and right decoded apart, then joined: the merged token */
        char* left = malloc(llen + 1);
        char* right = malloc(rlen + 1);
        if (!left || !right) {
            free(left);
            free(right);
            return 0;
        }
        memcpy(left, m, llen);
        memcpy(right, m + split, rlen);
        int ok = decode_key(left, &llen) && decode_key(right, &rlen);
        int64_t a = ok ? vocab_find(v, left, llen) : -1, b = ok ? vocab_find(v, right, rlen) : -1, merged = -1;
        if (a >= 0 && b >= 0) {
            char* both = malloc(llen + rlen + 1);
            if (both) {
                memcpy(both, left, llen);
                memcpy(both + llen, right, rlen);
                merged = vocab_find(v, both, llen + rlen);
                free(both);
            }
        }
        free(left);
        free(right);
        if (merged < 0) continue; /* a merge whose parts or result are not tokens can never apply */
        uint64_t pair = (uint64_t)a << 32 | (uint64_t)b;
        size_t i = hash_pair(pair) & (slots - 1);
        while (v->merges[i].rank != UINT32_MAX && v->merges[i].pair != pair) i = (i + 1) & (slots - 1);
        if (v->merges[i].rank == UINT32_MAX) v->merges[i] = (struct merge_entry){.pair = pair, .rank = (uint32_t)r, .merged = merged};
    }
    return 1;
}

ovtest_vocab* ovtest_vocab_ref(ovtest_vocab* v) {
    if (v) atomic_fetch_add(&v->refs, 1);
    return v;
}

void ovtest_vocab_free(ovtest_vocab* v) {
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1) return;
    for (size_t i = 0; i < v->nadded; i++) free(v->added[i].text);
    free(v->added);
    free(v->arena);
    free(v->entries);
    free(v->slots);
    free(v->merges);
    free(v->by_id);
    free(v);
}

/* index_ids builds the id-to-text index; an added token's text wins over a
 * vocabulary entry of the same id. */
static int index_ids(struct ovtest_vocab* v) {
    int64_t max = -1;
    for (size_t e = 0; e < v->nentries; e++) max = v->entries[e].id > max ? v->entries[e].id : max;
    for (size_t a = 0; a < v->nadded; a++) max = v->added[a].id > max ? v->added[a].id : max;
    v->nids = (size_t)(max + 1);
    v->by_id = calloc(v->nids ? v->nids : 1, sizeof *v->by_id);
    if (!v->by_id) return 0;
    for (size_t e = 0; e < v->nentries; e++) v->by_id[v->entries[e].id] = (int64_t)e + 1;
    for (size_t a = 0; a < v->nadded; a++) v->by_id[v->added[a].id] = -((int64_t)a + 1);
    return 1;
}

size_t ovtest_vocab_decode(const ovtest_vocab* v, int64_t id, char* out, size_t cap) {
    if (!v || id < 0 || (size_t)id >= v->nids || !v->by_id[id]) return 0;
    int64_t at = v->by_id[id];
    const char* text;
    size_t len;
    if (at < 0) {
        const struct added* a = &v->added[-at - 1];
        if (a->special) return 0;
        text = a->text;
        len = a->len;
    } else {
        const struct strmap_entry* e = &v->entries[at - 1];
        text = v->arena + e->off;
        len = e->len;
    }
    if (len >= cap) return len;
    memcpy(out, text, len);
    out[len] = 0;
    return len;
}

int ovtest_vocab_open(const char* dir, ovtest_vocab** out, char* err, size_t errlen) {
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE* f = fopen(path, "rb");
    if (!f) return 0; /* no tokenizer.json: the word tokenizer */
    char* buf = malloc(MAX_TOKENIZER_JSON + 1);
    size_t n = buf ? fread(buf, 1, MAX_TOKENIZER_JSON + 1, f) : 0;
    fclose(f);
    if (!buf || n > MAX_TOKENIZER_JSON) {
        free(buf);
        snprintf(err, errlen, "%s: larger than %u bytes", path, MAX_TOKENIZER_JSON);
        return -1;
    }
    struct ovtest_vocab* v = calloc(1, sizeof *v);
    if (!v || !(v->added = calloc(MAX_ADDED, sizeof *v->added))) {
        free(v);
        free(buf);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    atomic_init(&v->refs, 1);
    struct parsed p = {0};
    struct ovjson s = {.p = buf, .end = buf + n};
    int first = 1;
    char* key = NULL;
    size_t klen;
    if (ovjson_eat(&s, '{')) {
        while (ovjson_next_member(&s, &first, &key, &klen)) {
            if (ovjson_key_is(key, "added_tokens")) read_added(&s, v);
            else if (ovjson_key_is(key, "normalizer")) p.normalized = !ovjson_is_null(&s) && ovjson_skip_value(&s);
            else if (ovjson_key_is(key, "pre_tokenizer")) read_pre_tokenizer(&s, &p, v);
            else if (ovjson_key_is(key, "model")) read_model(&s, &p, v);
            else ovjson_skip_value(&s);
            free(key);
            key = NULL;
            if (s.failed) break;
        }
        if (!s.failed && ovjson_peek(&s) != -1) ovjson_fail(&s, "text after the object");
    }
    int usable = !s.failed && p.bpe && p.byte_level && p.use_regex && !p.normalized && !p.unsupported;
    if (usable && (!build_merges(v, &p) || !index_ids(v))) ovjson_fail(&s, "out of memory");
    for (size_t i = 0; i < p.nmerges; i++) free(p.merges[i]);
    free(p.merges);
    free(p.merge_split);
    free(p.merge_len);
    if (s.failed) {
        snprintf(err, errlen, "%s: not valid JSON at byte %zu: %s", path, (size_t)(s.p - buf), s.what);
        free(buf);
        ovtest_vocab_free(v);
        return -1;
    }
    free(buf);
    if (!usable) { /* another kind of tokenizer: the word tokenizer */
        ovtest_vocab_free(v);
        return 0;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        v->byte_id[b] = vocab_find(v, &c, 1);
    }
    *out = v;
    return 0;
}

/* ---- encoding ---- */

struct heap_item {
    uint32_t rank;
    uint32_t pos; /* the left symbol */
    int64_t merged;
};

static int heap_less(const struct heap_item* a, const struct heap_item* b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct heap_item* h, size_t* n, struct heap_item it) {
    size_t i = (*n)++;
    h[i] = it;
    while (i > 0 && heap_less(&h[i], &h[(i - 1) / 2])) {
        struct heap_item t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static struct heap_item heap_pop(struct heap_item* h, size_t* n) {
    struct heap_item top = h[0];
    h[0] = h[--*n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && heap_less(&h[l], &h[m])) m = l;
        if (r < *n && heap_less(&h[r], &h[m])) m = r;
        if (m == i) break;
        struct heap_item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

/* emit stores an id when there is room and counts it either way. */
static void emit(int64_t id, int64_t* ids, size_t cap, size_t* n) {
    if (*n < cap) ids[*n] = id;
    (*n)++;
}

/* bpe merges one piece's bytes by rank (Hugging Face's merge_word: a heap
 * of (rank, position), a merge skipped when its pair is gone). */
static void bpe(const ovtest_vocab* v, const unsigned char* s, size_t len, int64_t* ids, size_t cap, size_t* n) {
    if (v->ignore_merges) {
        int64_t whole = vocab_find(v, (const char*)s, len);
        if (whole >= 0) {
            emit(whole, ids, cap, n);
            return;
        }
    }
    int64_t* id = malloc(len * sizeof *id);
    long* next = malloc(len * sizeof *next);
    long* prev = malloc(len * sizeof *prev);
    /* At most m - 1 pairs at first and two for each of at most m - 1 merges. */
    struct heap_item* heap = malloc((len * 3 + 1) * sizeof *heap);
    if (!id || !next || !prev || !heap) abort(); /* the test library has no way to say it */
    /* A byte with no token of its own is dropped (no unk_token). */
    size_t m = 0;
    for (size_t i = 0; i < len; i++)
        if (v->byte_id[s[i]] >= 0) id[m++] = v->byte_id[s[i]];
    for (size_t i = 0; i < m; i++) {
        next[i] = i + 1 < m ? (long)i + 1 : -1;
        prev[i] = (long)i - 1;
    }
    size_t nheap = 0;
    for (size_t i = 0; i + 1 < m; i++) {
        const struct merge_entry* me = merge_find(v, id[i], id[i + 1]);
        if (me) heap_push(heap, &nheap, (struct heap_item){me->rank, (uint32_t)i, me->merged});
    }
    while (nheap) {
        struct heap_item top = heap_pop(heap, &nheap);
        long at = (long)top.pos;
        if (id[at] < 0 || next[at] < 0) continue;
        const struct merge_entry* me = merge_find(v, id[at], id[next[at]]);
        if (!me || me->merged != top.merged || me->rank != top.rank) continue;
        long gone = next[at];
        id[at] = top.merged;
        id[gone] = -1;
        next[at] = next[gone];
        if (next[at] >= 0) prev[next[at]] = at;
        if (prev[at] >= 0 && (me = merge_find(v, id[prev[at]], id[at])))
            heap_push(heap, &nheap, (struct heap_item){me->rank, (uint32_t)prev[at], me->merged});
        if (next[at] >= 0 && (me = merge_find(v, id[at], id[next[at]])))
            heap_push(heap, &nheap, (struct heap_item){me->rank, (uint32_t)at, me->merged});
    }
    for (size_t i = 0; i < m; i++)
        if (id[i] >= 0) emit(id[i], ids, cap, n);
    free(id);
    free(next);
    free(prev);
    free(heap);
}

/* encode_segment splits text between added tokens into pieces and merges
 * each. */
static void encode_segment(const ovtest_vocab* v, const unsigned char* s, size_t len, int64_t* ids, size_t cap,
                           size_t* n) {
    unsigned char* spaced = NULL;
    if (v->add_prefix_space && len > 0 && s[0] != ' ') { /* ByteLevel's add_prefix_space */
        spaced = malloc(len + 1);
        if (!spaced) abort();
        spaced[0] = ' ';
        memcpy(spaced + 1, s, len);
        s = spaced;
        len++;
    }
    for (size_t at = 0; at < len;) {
        size_t piece = next_piece(s + at, len - at);
        bpe(v, s + at, piece, ids, cap, n);
        at += piece;
    }
    free(spaced);
}

/* added_at is the longest added token at s, or NULL. */
static const struct added* added_at(const ovtest_vocab* v, const char* s, size_t left) {
    const struct added* best = NULL;
    for (size_t i = 0; i < v->nadded; i++) {
        const struct added* a = &v->added[i];
        if (a->len <= left && (!best || a->len > best->len) && memcmp(s, a->text, a->len) == 0) best = a;
    }
    return best;
}

static size_t tokenize_words(const char* text, int64_t* ids, size_t cap) {
    size_t n = 0;
    const char* p = text;
    while (*p) {
        while (*p == ' ' || *p == '\n' || *p == '\t') p++;
        if (!*p) break;
        uint64_t h = 1469598103934665603ULL;
        for (; *p && *p != ' ' && *p != '\n' && *p != '\t'; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        if (n < cap) ids[n] = 100 + (int64_t)(h % 50000); /* below 100: the special tokens' ids */
        n++;
    }
    return n;
}

size_t ovtest_tokenize(const ovtest_vocab* v, const char* text, int64_t* ids, size_t cap) {
    if (!v) return tokenize_words(text, ids, cap);
    size_t n = 0, len = strlen(text), start = 0;
    for (size_t at = 0; at < len;) {
        const struct added* a = v->added_first[(unsigned char)text[at]] ? added_at(v, text + at, len - at) : NULL;
        if (!a) {
            at++;
            continue;
        }
        encode_segment(v, (const unsigned char*)text + start, at - start, ids, cap, &n);
        emit(a->id, ids, cap, &n);
        at += a->len;
        start = at;
    }
    encode_segment(v, (const unsigned char*)text + start, len - start, ids, cap, &n);
    return n;
}
