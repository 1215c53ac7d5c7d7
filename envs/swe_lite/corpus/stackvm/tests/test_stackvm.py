import pytest

from stackvm import assemble, binary, evaluate, run


def countdown():
    return """
push 3      ; counter
dup         ; 1
print       ; 2
push 1      ; 3
sub         ; 4
dup         ; 5
jz 8        ; 6
jmp 1       ; 7
halt        ; 8
"""


def test_assemble_parses_arguments():
    assert assemble("push 2\nadd") == [("push", 2), ("add", None)]


def test_assemble_skips_comments_and_blanks():
    assert assemble("; nothing\n\n  push 1 ; one\n") == [("push", 1)]


def test_assemble_is_case_insensitive():
    assert assemble("PUSH 5") == [("push", 5)]


def test_assemble_unknown_instruction():
    with pytest.raises(ValueError, match="line 2"):
        assemble("push 1\nfly\n")


def test_assemble_wrong_arity():
    with pytest.raises(ValueError, match="takes 1"):
        assemble("push")


def test_add():
    assert evaluate("push 2\npush 3\nadd") == 5


def test_sub_order():
    assert evaluate("push 10\npush 4\nsub") == 6


def test_mul():
    assert evaluate("push 6\npush 7\nmul") == 42


def test_div_truncates_toward_zero():
    assert binary("div", -7, 2) == -3


def test_div_positive():
    assert binary("div", 7, 2) == 3


def test_mod_sign_follows_dividend():
    assert binary("mod", -7, 2) == -1


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        binary("div", 1, 0)


def test_lt_and_eq():
    assert (binary("lt", 1, 2), binary("lt", 2, 2), binary("eq", 3, 3)) == (1, 0, 1)


def test_swap():
    assert run(assemble("push 1\npush 2\nswap"))[0] == [2, 1]


def test_underflow():
    with pytest.raises(IndexError):
        evaluate("push 1\nadd")


def test_countdown_loop_prints():
    assert run(assemble(countdown()))[1] == [3, 2, 1]


def test_halt_stops():
    assert evaluate("push 1\nhalt\npush 2") == 1


def test_empty_program():
    assert evaluate("") is None


def test_step_limit():
    with pytest.raises(RuntimeError):
        run(assemble("jmp 0"), max_steps=50)


def test_jz_pops_condition():
    assert run(assemble("push 9\npush 1\njz 0"))[0] == [9]
