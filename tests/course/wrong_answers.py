"""One plausible wrong answer to each exercise of the course, by chapter and function name.

Each entry takes the chapter's namespace (the names its cells defined, so that a wrong answer can be one of the
chapter's own functions) and returns the wrong function. tests/course/test_checks_can_fail.py runs every
chapter with each exercise's test fed these, and requires the test to refuse each with an AssertionError that
shows what it expected against what it got."""

import math

import numpy as np


def _solution(chapter, name):
    from minibert.course import solution
    return solution(chapter, name)


def mirrored_causal_mask(ns):
    return lambda T: np.fliplr(np.tril(np.ones((T, T), dtype=bool)))  # row sums 1..T, but the wrong triangle


def parameters_untied(ns):
    right = _solution("01_what_bert_is", "parameters_for")
    return lambda L, H, F, V, P: right(L, H, F, V, P) + V * H  # a decoder matrix of its own, not the word table


def embedding_share_word_table_only(ns):
    right = _solution("01_what_bert_is", "parameters_for")

    def share(c):
        return c.vocab_size * c.hidden_size / right(c.num_hidden_layers, c.hidden_size, c.intermediate_size,
                                                    c.vocab_size, c.max_position_embeddings)
    return share


def join_keeping_hashes(ns):
    def join(tokens):
        words = []
        for token in tokens:
            if token.startswith("##") and words:
                words[-1] += token  # the "##" is glued in too
            else:
                words.append(token)
        return words
    return join


def pad_on_the_left(ns):
    def pad(sequences, pad_id):
        T = max(len(s) for s in sequences)
        ids = np.array([[pad_id] * (T - len(s)) + list(s) for s in sequences], dtype=np.int64)  # (B, T)
        mask = np.array([[0] * (T - len(s)) + [1] * len(s) for s in sequences], dtype=np.int64)  # (B, T)
        return ids, mask
    return pad


def first_sep_in_segment_b(ns):
    return lambda n_a, n_b: [0] * (1 + n_a) + [1] * (n_b + 2)


def sines_then_cosines(ns):
    right = _solution("03_embeddings", "sinusoidal_table")

    def table(P, H):
        pe = right(P, H)
        return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)  # all sines, then all cosines: not interleaved
    return table


def layernorm_dx_without_ehat_term(ns):
    def dx(dy, ehat, rstd, gamma):
        g = dy * gamma  # (..., H)
        return rstd * (g - g.mean(-1, keepdims=True))  # forgets that the variance moves with e too
    return dx


def word_table_grad_overwrites(ns):
    def grad(ids, de, V, pad_id):
        g = np.zeros((V, de.shape[-1]))  # (V, H)
        keep = ids != pad_id
        g[ids[keep]] = de[keep]  # a repeated id keeps its last row instead of the sum
        return g
    return grad


def merge_heads_interleaved(ns):
    def merge(t):
        B, A, T, D = t.shape
        return t.transpose(0, 2, 3, 1).reshape(B, T, A * D)  # (B, T, D, A): features of the heads interleaved
    return merge


def causal_mask_of_the_future(ns):
    return lambda T: np.where(np.triu(np.ones((T, T), dtype=bool)), 0.0, np.finfo(np.float64).min)


def jacobian_without_outer_product(ns):
    return lambda p: np.diag(p)  # the diagonal term alone


def gelu_tanh_derivative_half_product_rule(ns):
    def derivative(x):
        t = np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))
        return 0.5 * (1.0 + t)  # d/dx of x/2 (1 + tanh u) without the x/2 d tanh(u)/dx term
    return derivative


def rmsnorm_with_layernorm_mean(ns):
    def backward(dy, x, w, eps):
        rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (N, 1)
        xhat, g = x * rstd, dy * w  # (N, H)
        return rstd * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return backward


def relu_ffn_backward_without_the_gate(ns):
    def backward(dy, h, w1, b1, w2):
        f = h @ w1.T + b1  # (B, T, F)
        g = np.maximum(f, 0)  # (B, T, F)
        dw2 = dy.reshape(-1, dy.shape[-1]).T @ g.reshape(-1, g.shape[-1])  # (H, F)
        df = dy @ w2  # (B, T, F): ReLU's gate forgotten, every gradient let through
        dw1 = df.reshape(-1, df.shape[-1]).T @ h.reshape(-1, h.shape[-1])  # (F, H)
        return df @ w1, dw1, df.reshape(-1, df.shape[-1]).sum(axis=0), dw2
    return backward


def exact_k_masking(ns):
    return ns["mask_tokens"]  # the chapter's own masking: exactly k = round(p n) targets per sequence


def accuracy_over_every_row(ns):
    return lambda logits, labels: float((logits.argmax(axis=-1) == labels).mean())  # counts -100 rows as wrong


def unigram_bias_unnormalised(ns):
    def bias(counts, special_ids):
        smoothed = counts.astype(np.float64) + 1.0
        smoothed[list(special_ids)] = 1.0
        return np.log(smoothed)  # log counts, not log probabilities
    return bias


def span_end_before_start(ns):
    return lambda start, end, max_answer_length: (int(np.argmax(start)), int(np.argmax(end)))


def every_piece_labelled(ns):
    def labels_for(tokenizer, words, tag_ids):
        ids, labels = [tokenizer.cls_token_id], [-100]
        for word, tag in zip(words, tag_ids):
            pieces = tokenizer.encode(word, add_special_tokens=False).input_ids
            ids += pieces
            labels += [tag] * len(pieces)  # the tag on every piece, not the first alone
        return ids + [tokenizer.sep_token_id], labels + [-100]
    return labels_for


def f1_averaged_over_absent_classes(ns):
    right = _solution("07_finetuning", "macro_f1")

    def f1(y_true, y_pred, num_classes):
        present = len(set(y_true.tolist()) | set(y_pred.tolist()))
        return right(y_true, y_pred, num_classes) * present / num_classes  # divides by every class
    return f1


def spearman_ties_ranked_in_order(ns):
    def spearman(x, y):
        rx, ry = np.argsort(np.argsort(x)) + 1.0, np.argsort(np.argsort(y)) + 1.0  # ties get distinct ranks
        dx, dy = rx - rx.mean(), ry - ry.mean()
        return float((dx * dy).sum() / np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    return spearman


def state_without_gradients(ns):
    right = _solution("08_cost", "training_state_bytes")
    return lambda cfg: right(cfg) * 3 // 4  # parameters and moments, the gradients forgotten


def segment_of_square_root(ns):
    return lambda L, c, s: max(1, round(math.sqrt(L)))  # right only when c = s


def recompute_derivative_at_the_input(ns):
    def backward(dout, inputs, Ws, bs):
        dWs, dbs = [None] * len(Ws), [None] * len(Ws)
        for i in reversed(range(len(Ws))):
            x = inputs[i]  # (N, H)
            dz = dout * (1 - x * x)  # tanh' taken at the layer's input, not at its output
            dWs[i], dbs[i] = x.T @ dz, dz.sum(0)
            dout = dz @ Ws[i].T
        return dout, dWs, dbs
    return backward


def albert_without_projection(ns):
    right = _solution("09_descendants", "albert_parameters")
    return lambda cfg: right(cfg) - (cfg.embedding_width * cfg.hidden_size + cfg.hidden_size)


def every_sample_counted_replaced(ns):
    def corrupt(input_ids, labels, sampled):
        masked = labels != -100  # (B, T)
        corrupted = np.where(masked, labels, input_ids)  # (B, T)
        corrupted[masked] = sampled
        return corrupted, masked.astype(np.int64)  # a sample equal to the original is not a replacement
    return corrupt


def positions_counting_padding_too(ns):
    return lambda input_ids, pad: np.cumsum(input_ids != pad, axis=1) + pad  # padding not set to pad_token_id


WRONG = {
    "01_what_bert_is": {"causal_mask": mirrored_causal_mask, "parameters_for": parameters_untied,
                        "embedding_share": embedding_share_word_table_only},
    "02_tokens": {"join_pieces": join_keeping_hashes, "pad_batch": pad_on_the_left,
                  "segment_ids": first_sep_in_segment_b},
    "03_embeddings": {"sinusoidal_table": sines_then_cosines, "layernorm_dx": layernorm_dx_without_ehat_term,
                      "word_table_grad": word_table_grad_overwrites},
    "04_attention": {"merge_heads": merge_heads_interleaved, "causal_mask": causal_mask_of_the_future,
                     "softmax_jacobian": jacobian_without_outer_product},
    "05_encoder_layer": {"gelu_tanh_derivative": gelu_tanh_derivative_half_product_rule,
                         "rmsnorm_backward": rmsnorm_with_layernorm_mean,
                         "relu_ffn_backward": relu_ffn_backward_without_the_gate},
    "06_pretraining": {"mask_bernoulli": exact_k_masking, "masked_accuracy": accuracy_over_every_row,
                       "unigram_bias": unigram_bias_unnormalised},
    "07_finetuning": {"best_span": span_end_before_start, "first_piece_labels": every_piece_labelled,
                      "macro_f1": f1_averaged_over_absent_classes, "spearman": spearman_ties_ranked_in_order},
    "08_cost": {"training_state_bytes": state_without_gradients, "best_segment": segment_of_square_root,
                "recompute_backward": recompute_derivative_at_the_input},
    "09_descendants": {"albert_parameters": albert_without_projection, "corrupt": every_sample_counted_replaced,
                       "positions": positions_counting_padding_too},
}
