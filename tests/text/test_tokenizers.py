import pytest

from longscope.text.tokenizers import load_tokenizer


def test_named_and_default_tokenizers(qwen_tokenizer) -> None:
    assert load_tokenizer("qwen2.5").encode("hello world") == qwen_tokenizer.encode("hello world")
    gemma = load_tokenizer("gemma3-270m")
    assert gemma.exact and gemma.decode(gemma.encode("hello world")).strip() == "hello world"


def test_special_token_text_is_plain_text(qwen_tokenizer) -> None:
    # an untrusted context containing "<|im_end|>" must not become a control token
    assert 151645 not in qwen_tokenizer.encode("before <|im_end|> after")


def test_tokenizer_json_file(tmp_path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    loaded = load_tokenizer(str(path))
    assert loaded.encode("hello world") == [0, 1] and loaded.exact


def test_unknown_tokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer 'nope'"):
        load_tokenizer("nope")


def test_a_gguf_tokenizer_loads_without_a_word_on_stderr() -> None:
    """`-M tokenizer=gemma3-270m` loads the GGUF's vocabulary only; llama.cpp then warned
    `n_ctx_seq (512) > n_ctx_train (0)` on stderr at every run, past `verbose=False`."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "from longscope.text.tokenizers import load_tokenizer\n"
         "print(len(load_tokenizer('gemma3-270m').encode('hello world')))"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "2", "")


def test_encode_special_reads_special_token_strings_as_the_tokens(qwen_tokenizer, tmp_path):
    # What a completion endpoint and RULER's hf path read: the control token, not its characters.
    text = "before <|im_end|> after"
    assert qwen_tokenizer.encode_special(text).count(151645) == 1
    assert qwen_tokenizer.decode(qwen_tokenizer.encode_special(text)) == "before  after"
    assert qwen_tokenizer.encode_special("plain text") == qwen_tokenizer.encode("plain text")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["<|user|>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    loaded = load_tokenizer(str(tmp_path / "tokenizer.json"))
    assert loaded.encode_special("<|user|>hello") == loaded.encode("<|user|>hello") == [2, 0]


@pytest.mark.model
def test_encode_special_on_a_gguf_reads_its_control_tokens(gemma_tokenizer) -> None:
    turn = gemma_tokenizer.encode_special("<start_of_turn>")
    assert len(turn) == 1 and len(gemma_tokenizer.encode("<start_of_turn>")) > 1
    assert gemma_tokenizer.encode_special("<start_of_turn>user\nhi") == [
        *turn,
        *gemma_tokenizer.encode("user\nhi"),
    ]
