/* Stands in for libopenvino.so and libopenvino_genai.so, which npud links
 * but calls nothing from directly. */
int npud_ovtest_stub_library(void) { return 0; }
