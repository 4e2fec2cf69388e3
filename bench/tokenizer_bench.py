"""Tokenizer throughput (our encode path vs the raw `tokenizers` encode_batch, same texts, one
run) and padded-token share at max_length 256.

Two raw baselines: `encode_batch` alone (Encoding objects, nothing read out yet) and
`encode_batch` plus reading `ids` and `attention_mask`, which is the same output ours returns.

    python bench/tokenizer_bench.py
"""
import time

from common import write

from course_lib.data.batching import padding_report
from course_lib.data.sources import clean_text, exact_dedup, raw_reviews
from course_lib.data.tokenization import encode_texts, load_tokenizer


def best_of(fn, n=3):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    texts, _ = raw_reviews("offline")
    texts = [clean_text(texts[i]) for i in exact_dedup(texts).keep]
    out = {"texts": len(texts)}
    for name in ("wordpiece", "bpe"):
        tok = load_tokenizer(name)
        raw = tok.backend_tokenizer
        t_raw = best_of(lambda raw=raw: raw.encode_batch(texts))
        t_raw_out = best_of(lambda raw=raw: [(e.ids, e.attention_mask) for e in raw.encode_batch(texts)])
        t_ours = best_of(lambda tok=tok: encode_texts(tok, texts))
        lengths = [len(x) for x in encode_texts(tok, texts)["input_ids"]]
        out[name] = {"raw_seconds": round(t_raw, 2), "raw_with_ids_and_mask_seconds": round(t_raw_out, 2),
                     "ours_seconds": round(t_ours, 2),
                     "ours_vs_raw_throughput": round(t_raw / t_ours, 3),
                     "ours_vs_raw_same_output_throughput": round(t_raw_out / t_ours, 3),
                     "padding_256": padding_report(lengths, batch_size=32, max_length=256)}
    write("tokenizer", out)


if __name__ == "__main__":
    main()
