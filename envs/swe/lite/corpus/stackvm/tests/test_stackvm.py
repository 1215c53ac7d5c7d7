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


def test_assemble_negative_argument():
    assert assemble("push -4\njz 0") == [("push", -4), ("jz", 0)]


def test_assemble_skips_comments_and_blanks():
    assert assemble("; nothing\n\n  push 1 ; one\n") == [("push", 1)]


def test_assemble_empty():
    assert assemble("") == []
    assert assemble("\n   \n; only a comment") == []


def test_assemble_is_case_insensitive():
    assert assemble("PUSH 5\nHalt") == [("push", 5), ("halt", None)]


def test_assemble_unknown_instruction():
    with pytest.raises(ValueError, match="line 2"):
        assemble("push 1\nfly\n")


def test_assemble_unknown_first_line():
    with pytest.raises(ValueError, match="line 1: unknown instruction 'nop'"):
        assemble("nop")


def test_assemble_counts_blank_lines():
    with pytest.raises(ValueError, match="line 3"):
        assemble("push 1\n\npush\n")


def test_assemble_wrong_arity():
    with pytest.raises(ValueError, match="takes 1"):
        assemble("push")


def test_assemble_extra_argument():
    with pytest.raises(ValueError, match="add takes 0"):
        assemble("add 3")


def test_assemble_two_arguments():
    with pytest.raises(ValueError, match="jmp takes 1"):
        assemble("jmp 1 2")


def test_assemble_non_integer_argument():
    with pytest.raises(ValueError):
        assemble("push x")


def test_run_empty_program():
    assert run([]) == ([], [])


def test_run_push_and_pop():
    assert run([("push", 1), ("push", 2), ("pop", None)]) == ([1], [])


def test_run_pop_empty():
    with pytest.raises(IndexError):
        run([("pop", None)])


def test_run_dup():
    assert run([("push", 5), ("dup", None)]) == ([5, 5], [])


def test_swap():
    assert run([("push", 1), ("push", 2), ("swap", None)]) == ([2, 1], [])


def test_swap_keeps_lower_values():
    assert run([("push", 7), ("push", 8), ("push", 9), ("swap", None)]) == ([7, 9, 8], [])


def test_swap_underflow():
    with pytest.raises(IndexError, match="stack underflow"):
        run([("push", 1), ("swap", None)])


def test_run_binary_operation():
    assert run([("push", 10), ("push", 4), ("sub", None)]) == ([6], [])


def test_run_comparison():
    assert run([("push", 2), ("push", 3), ("lt", None), ("push", 4), ("push", 4), ("eq", None)]) == ([1, 1], [])


def test_run_print_keeps_value():
    assert run([("push", 4), ("print", None), ("push", 6), ("print", None)]) == ([4, 6], [4, 6])


def test_run_jmp_skips():
    assert run([("jmp", 2), ("push", 1), ("push", 2)]) == ([2], [])


def test_run_jz_taken():
    assert run([("push", 0), ("jz", 3), ("push", 1), ("push", 2)]) == ([2], [])


def test_jz_pops_condition():
    assert run([("push", 9), ("push", 1), ("jz", 0)]) == ([9], [])


def test_run_jz_not_taken_on_negative():
    assert run([("push", -1), ("jz", 3), ("push", 1), ("push", 2)]) == ([1, 2], [])


def test_countdown_loop_prints():
    assert run(assemble(countdown()))[1] == [3, 2, 1]


def test_countdown_final_stack():
    assert run(assemble(countdown()))[0] == [3, 2, 1, 0]


def test_halt_stops():
    assert run([("push", 1), ("halt", None), ("push", 2)]) == ([1], [])


def test_step_limit():
    with pytest.raises(RuntimeError):
        run([("jmp", 0)], max_steps=50)


def test_step_limit_exact():
    assert run([("push", 1), ("push", 2), ("push", 3)], max_steps=3) == ([1, 2, 3], [])


def test_step_limit_one_short():
    with pytest.raises(RuntimeError, match="step limit"):
        run([("push", 1), ("push", 2), ("push", 3)], max_steps=2)


def test_binary_add():
    assert binary("add", 2, 3) == 5
    assert binary("add", -4, 0) == -4


def test_binary_sub_order():
    assert binary("sub", 10, 4) == 6
    assert binary("sub", 4, 10) == -6


def test_binary_mul():
    assert binary("mul", 6, 7) == 42
    assert binary("mul", -3, 0) == 0


def test_div_truncates_toward_zero():
    assert binary("div", -7, 2) == -3


def test_div_positive():
    assert binary("div", 7, 2) == 3


def test_div_negative_divisor():
    assert binary("div", 7, -2) == -3
    assert binary("div", -7, -2) == 3


def test_div_exact():
    assert binary("div", -6, 3) == -2
    assert binary("div", 0, -5) == 0


def test_mod_sign_follows_dividend():
    assert binary("mod", -7, 2) == -1


def test_mod_positive():
    assert binary("mod", 7, 3) == 1
    assert binary("mod", 9, 3) == 0


def test_mod_negative_divisor():
    assert binary("mod", 7, -2) == 1


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        binary("div", 1, 0)


def test_mod_by_zero():
    with pytest.raises(ZeroDivisionError, match="mod by zero"):
        binary("mod", 5, 0)


def test_div_zero_by_zero():
    with pytest.raises(ZeroDivisionError, match="div by zero"):
        binary("div", 0, 0)


def test_lt():
    assert (binary("lt", 1, 2), binary("lt", 2, 2), binary("lt", 3, 2)) == (1, 0, 0)


def test_lt_negative():
    assert binary("lt", -5, -4) == 1


def test_eq():
    assert (binary("eq", 3, 3), binary("eq", 3, 4)) == (1, 0)


def test_eq_negative():
    assert binary("eq", -2, -2) == 1
    assert binary("eq", -2, 2) == 0


def test_evaluate_add():
    assert evaluate("push 2\npush 3\nadd") == 5


def test_evaluate_mul():
    assert evaluate("push 6\npush 7\nmul") == 42


def test_evaluate_top_of_stack():
    assert evaluate("push 1\npush 2\npush 3") == 3


def test_underflow():
    with pytest.raises(IndexError):
        evaluate("push 1\nadd")


def test_evaluate_halt():
    assert evaluate("push 1\nhalt\npush 2") == 1


def test_empty_program():
    assert evaluate("") is None
    assert evaluate("push 1\npop") is None
