/*===- pccxrt.h - C API of the pccx runtime ------------------------------===*
 *
 * Load a .pccx bundle, run token steps on the simulator or the KV260, read
 * logits, sample. Every function returns 0 on success and a negative value
 * on failure; pccxrt_last_error() then describes the calling thread's last
 * failure. Calls on one handle from several threads take turns (a lock per
 * handle); pccxrt_close must not overlap another call on the same handle.
 * Separate handles are independent.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PCCXRT_H
#define PCCXRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pccxrt_model pccxrt_model;

typedef enum {
  PCCXRT_DEVICE_SIM = 0,   /* the functional simulator */
  PCCXRT_DEVICE_KV260 = 1, /* the board (UIO "pccx-npu", u-dma-buf udmabuf0) */
} pccxrt_device;

typedef enum {
  /* The NPU's datapath bit for bit: BF16 L2, the compiled KV-cache dtype */
  PCCXRT_NUMERICS_HARDWARE = 0,
  PCCXRT_NUMERICS_REFERENCE = 1, /* fp32 everywhere (simulator only) */
  /* Hardware numerics with INT8 activations in the weight matrices: the
   * simulator's fast path, and its default (pccxrt_open_device without a
   * numerics option) */
  PCCXRT_NUMERICS_INTEGER = 2,
} pccxrt_numerics;

typedef struct {
  double temperature;        /* 0: greedy */
  int64_t top_k;             /* 0: off */
  double top_p;              /* 1: off */
  double repetition_penalty; /* 1: off */
  uint64_t seed;
} pccxrt_sampling;

/* Opens a bundle on `device` with `numerics`; NULL on failure (see
 * pccxrt_last_error(NULL)). The same as pccxrt_open_device with the
 * device's name and "numerics=hardware", "numerics=reference" or
 * "numerics=integer". */
pccxrt_model *pccxrt_open(const char *path, pccxrt_device device,
                          pccxrt_numerics numerics);

/* Opens a bundle on the registered device called `device` ("sim", "kv260";
 * pccxrt_device_name lists them) with its options as "KEY=VALUE,..." (NULL
 * or "" for the defaults; pccx-run --help describes them, e.g.
 * "numerics=reference,threads=4"). NULL on failure: an unknown device,
 * option or value is named in pccxrt_last_error(NULL). */
pccxrt_model *pccxrt_open_device(const char *path, const char *device,
                                 const char *options);

/* The registered devices: their number, and the name and one-line
 * description of device `index` (NULL past the last). The strings live as
 * long as the library. */
size_t pccxrt_device_count(void);
const char *pccxrt_device_name(size_t index);
const char *pccxrt_device_description(size_t index);
void pccxrt_close(pccxrt_model *model);

/* The calling thread's last error (on `model`, or of a failed pccxrt_open;
 * the argument is kept for compatibility). */
const char *pccxrt_last_error(const pccxrt_model *model);

int64_t pccxrt_vocab_size(const pccxrt_model *model);
int64_t pccxrt_position(const pccxrt_model *model);
int64_t pccxrt_capacity(const pccxrt_model *model);

/* Forgets every cached position and restarts the sampler's generator
 * (the same seed then draws the same tokens again). */
int pccxrt_reset(pccxrt_model *model);

/* Consumes `count` tokens at the next positions. With `logits` non-NULL,
 * writes count * vocab_size floats (one row per token). */
int pccxrt_consume(pccxrt_model *model, const int32_t *tokens, size_t count,
                   int decode_only, float *logits);

/* Picks a token from `logits` (vocab_size floats, modified in place) given
 * the `seen` ids; the generator state lives in the model handle. */
int pccxrt_sample(pccxrt_model *model, const pccxrt_sampling *options,
                  float *logits, const int32_t *seen, size_t seen_count,
                  int32_t *token);

/* The BOS id of the model's config, or -1 when it has none. */
/* ---- several sequences (slots) -----------------------------------------
 * A handle holds one sequence (slot 0, the one the calls above use) until
 * pccxrt_reserve_slots gives it more. pccxrt_step decodes rows of several
 * slots together: with a bundle compiled with --decode-batch they share
 * each pass over the weights; each slot's logits are those it would get
 * alone, bit for bit. */

/* Holds at least `count` slots (new ones empty). */
int pccxrt_reserve_slots(pccxrt_model *model, int count);
int pccxrt_slot_count(const pccxrt_model *model);
/* Rows a batched step holds (the largest batch program's), 1 without one. */
int64_t pccxrt_batch_rows(const pccxrt_model *model);
int64_t pccxrt_slot_position(const pccxrt_model *model, int slot);
int pccxrt_reset_slot(pccxrt_model *model, int slot);
/* Consumes `count` tokens at the next positions of `slot`, as
 * pccxrt_consume does for slot 0. */
int pccxrt_consume_slot(pccxrt_model *model, int slot, const int32_t *tokens,
                        size_t count, int decode_only, float *logits);
/* As pccxrt_consume_slot, but `logits` (not NULL) receives only the last
 * token's vocab_size floats: the prompt's prefill steps before the last
 * then leave out the LM head (what a generating caller wants). */
int pccxrt_consume_last(pccxrt_model *model, int slot, const int32_t *tokens,
                        size_t count, int decode_only, float *logits);
/* One token for each of `count` rows: row i's token `tokens[i]` at the
 * next position of slot `slots[i]` (rows of one slot in order). `logits`,
 * when not NULL, receives count * vocab_size floats, row by row. */
int pccxrt_step(pccxrt_model *model, const int *slots, const int32_t *tokens,
                size_t count, float *logits);
/* Forgets the positions of `slot` from `position` on (at most its
 * position; -1 beyond). The next steps give exactly what a fresh run of the
 * kept tokens gives: when a sliding layer's ring no longer holds the window
 * before `position`, the slot is prefilled again from an empty cache with
 * the tokens it keeps (docs/serving.md, "What a request reuses"). */
int pccxrt_rewind(pccxrt_model *model, int slot, int64_t position);

int32_t pccxrt_bos_token(const pccxrt_model *model);

/* The config's EOS ids: writes up to `capacity` of them to `ids` and their
 * number to `*count` (call with capacity 0 to learn it). */
int pccxrt_eos_tokens(const pccxrt_model *model, int32_t *ids,
                      size_t capacity, size_t *count);

/* Text to token ids with the bundle's tokenizer (BOS first when `add_bos`).
 * Sets `*count` to the number of ids; writes them when they fit in
 * `capacity` (else fails, so call again with a larger buffer; `ids` may be
 * NULL with capacity 0 to learn the count). Fails when the bundle carries
 * no tokenizer. */
int pccxrt_tokenize(pccxrt_model *model, const char *text, int add_bos,
                    int32_t *ids, size_t capacity, size_t *count);

/* Token ids to UTF-8 text. Sets `*length` to the text's byte length; when
 * length + 1 <= capacity writes the text and a terminating NUL to `text`
 * (else fails; `text` may be NULL with capacity 0 to learn the length). */
int pccxrt_detokenize(pccxrt_model *model, const int32_t *ids, size_t count,
                      char *text, size_t capacity, size_t *length);

/* ---- structured output -------------------------------------------------
 * A constraint for one reply: the tokens that would make the text stop
 * being a prefix of a JSON document valid under a schema (the subset in
 * docs/serving.md) are masked before sampling, and each chosen token
 * advances it. Independent of its model handle once made (it keeps the
 * vocabulary it needs); one constraint is used by one thread at a time. */
typedef struct pccxrt_json pccxrt_json;

/* A constraint under `schema` (JSON Schema text; NULL: any JSON object)
 * over the bundle's tokenizer. `end_tokens` (`end_count` ids) end the reply
 * once the document is complete; NULL: the model's EOS ids and, when the
 * tokenizer has it, <end_of_turn>. NULL on failure: an invalid schema (the
 * message names the keyword and where it is), no tokenizer, or one that
 * cannot spell what the schema may need. */
pccxrt_json *pccxrt_json_new(pccxrt_model *model, const char *schema,
                             const int32_t *end_tokens, size_t end_count);
/* Sets the logits (`count` floats, the model's vocab_size) of the tokens
 * that cannot come next to -INFINITY; fails when no token can. */
int pccxrt_json_mask(pccxrt_json *json, float *logits, size_t count);
/* Takes the token chosen; fails (state unchanged) when it is not allowed. */
int pccxrt_json_accept(pccxrt_json *json, int32_t token);
/* 1 when a complete document has been read (an end token may come), else 0. */
int pccxrt_json_complete(const pccxrt_json *json);
void pccxrt_json_free(pccxrt_json *json);

#ifdef __cplusplus
}
#endif

#endif
