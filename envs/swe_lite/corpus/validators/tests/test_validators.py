from validators import is_email, is_hex_color, is_identifier, is_ipv4, isbn10_valid, luhn_valid


def test_ipv4_valid():
    assert is_ipv4("192.168.0.1")


def test_ipv4_edges():
    assert is_ipv4("0.0.0.0") and is_ipv4("255.255.255.255")


def test_ipv4_octet_too_large():
    assert not is_ipv4("256.1.1.1")


def test_ipv4_leading_zero():
    assert not is_ipv4("10.01.0.1")


def test_ipv4_wrong_count():
    assert not is_ipv4("1.2.3")


def test_ipv4_non_digit():
    assert not is_ipv4("1.2.3.x")


def test_hex_color_short_and_long():
    assert is_hex_color("#fA0") and is_hex_color("#00ff7F")


def test_hex_color_needs_hash():
    assert not is_hex_color("ffffff")


def test_hex_color_wrong_length():
    assert not is_hex_color("#ffff")


def test_hex_color_bad_digit():
    assert not is_hex_color("#ggg")


def test_luhn_valid_number():
    assert luhn_valid("4539 1488 0343 6467")


def test_luhn_invalid_number():
    assert not luhn_valid("4539 1488 0343 6468")


def test_luhn_short():
    assert not luhn_valid("0")


def test_luhn_two_digits():
    assert luhn_valid("18")


def test_luhn_letters():
    assert not luhn_valid("12a4")


def test_isbn10_valid():
    assert isbn10_valid("0-306-40615-2")


def test_isbn10_with_x():
    assert isbn10_valid("0-8044-2957-X")


def test_isbn10_bad_checksum():
    assert not isbn10_valid("0-306-40615-3")


def test_isbn10_x_not_last():
    assert not isbn10_valid("X-306-40615-2")


def test_identifier():
    assert is_identifier("_name2")


def test_identifier_digit_first():
    assert not is_identifier("2name")


def test_identifier_too_long():
    assert not is_identifier("a" * 33) and is_identifier("a" * 32)


def test_email_valid():
    assert is_email("ann@example.org")


def test_email_invalid_shapes():
    assert not any(is_email(t) for t in ("annexample.org", "@example.org", "a@b", "a@b..org", "a@@b.org"))
