/* The test library's JSON scanner (ovjson_test.c), shared by its readers
 * of a model folder's JSON files (ovbpe_test.c, ovgenai_test.c). */
#ifndef NPUD_OVJSON_TEST_H
#define NPUD_OVJSON_TEST_H

#include <stddef.h>
#include <stdint.h>

/* A scan of text from p to end; after a failure every call fails and
 * what says why. */
struct ovjson {
    const char* p;
    const char* end;
    int failed;
    const char* what; /* why, when failed */
    int depth;
};

/* UTF-8: the code point at s (n bytes left) and its length (an invalid
 * byte is U+FFFD, one byte long); a code point's bytes written to out. */
uint32_t ovjson_utf8_next(const unsigned char* s, size_t n, size_t* len);
size_t ovjson_utf8_put(uint32_t cp, char* out);
/* Each step fails (0, or -1 from peek at the end) and records why:
 * fail; ws skips blanks; peek is the next character; eat takes c;
 * literal takes a word (true, false, null); string reads a string with its
 * escapes decoded into a new buffer (out NULL: skipped); number an integer;
 * next_member reads an object's next key and its ':' (after '{'; first set
 * before the first), 0 at '}'; next_element is the same for arrays;
 * skip_value skips any value; string_value is a string member's value
 * (NULL for anything else, skipped); bool_value a boolean's (def for
 * anything else); is_null takes a null; key_is compares a key. */
int ovjson_fail(struct ovjson* s, const char* what);
void ovjson_ws(struct ovjson* s);
int ovjson_peek(struct ovjson* s);
int ovjson_eat(struct ovjson* s, char c);
int ovjson_literal(struct ovjson* s, const char* word);
int ovjson_string(struct ovjson* s, char** out, size_t* len);
int ovjson_number(struct ovjson* s, long long* out);
int ovjson_next_member(struct ovjson* s, int* first, char** key, size_t* klen);
int ovjson_next_element(struct ovjson* s, int* first);
int ovjson_skip_value(struct ovjson* s);
char* ovjson_string_value(struct ovjson* s);
int ovjson_bool_value(struct ovjson* s, int def);
int ovjson_is_null(struct ovjson* s);
int ovjson_key_is(const char* key, const char* name);

#endif
