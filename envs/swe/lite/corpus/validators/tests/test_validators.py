from validators import is_email, is_hex_color, is_identifier, is_ipv4, isbn10_valid, luhn_valid


def test_ipv4_valid():
    assert is_ipv4("192.168.0.1") is True


def test_ipv4_edges():
    assert is_ipv4("0.0.0.0") is True
    assert is_ipv4("255.255.255.255") is True


def test_ipv4_zero_octets_inside():
    assert is_ipv4("10.0.100.9") is True


def test_ipv4_octet_too_large():
    assert is_ipv4("256.1.1.1") is False


def test_ipv4_last_octet_too_large():
    assert is_ipv4("1.1.1.256") is False
    assert is_ipv4("1.1.1.999") is False


def test_ipv4_leading_zero():
    assert is_ipv4("10.01.0.1") is False


def test_ipv4_leading_zero_first():
    assert is_ipv4("00.1.1.1") is False
    assert is_ipv4("1.1.1.007") is False


def test_ipv4_wrong_count():
    assert is_ipv4("1.2.3") is False


def test_ipv4_too_many_parts():
    assert is_ipv4("1.2.3.4.5") is False
    assert is_ipv4("") is False


def test_ipv4_non_digit():
    assert is_ipv4("1.2.3.x") is False


def test_ipv4_empty_or_signed_octet():
    assert is_ipv4("1..2.3") is False
    assert is_ipv4("-1.2.3.4") is False


def test_hex_color_short_and_long():
    assert is_hex_color("#fA0") is True
    assert is_hex_color("#00ff7F") is True


def test_hex_color_upper_case():
    assert is_hex_color("#ABCDEF") is True


def test_hex_color_needs_hash():
    assert is_hex_color("ffffff") is False


def test_hex_color_hash_not_first():
    assert is_hex_color("fff#") is False


def test_hex_color_wrong_length():
    assert is_hex_color("#ffff") is False


def test_hex_color_too_short_or_long():
    assert is_hex_color("#ab") is False
    assert is_hex_color("#abcdef0") is False


def test_hex_color_only_hash():
    assert is_hex_color("#") is False


def test_hex_color_bad_digit():
    assert is_hex_color("#ggg") is False


def test_hex_color_bad_last_digit():
    assert is_hex_color("#12345z") is False


def test_luhn_valid_number():
    assert luhn_valid("4539 1488 0343 6467") is True


def test_luhn_classic_example():
    assert luhn_valid("79927398713") is True


def test_luhn_invalid_number():
    assert luhn_valid("4539 1488 0343 6468") is False


def test_luhn_invalid_classic():
    assert luhn_valid("79927398710") is False


def test_luhn_short():
    assert luhn_valid("0") is False


def test_luhn_empty():
    assert luhn_valid("") is False
    assert luhn_valid("   ") is False


def test_luhn_two_digits():
    assert luhn_valid("18") is True


def test_luhn_doubled_digit_over_nine():
    assert luhn_valid("59") is True
    assert luhn_valid("91") is True


def test_luhn_zeros():
    assert luhn_valid("00") is True


def test_luhn_letters():
    assert luhn_valid("12a4") is False


def test_isbn10_valid():
    assert isbn10_valid("0-306-40615-2") is True


def test_isbn10_without_hyphens():
    assert isbn10_valid("0306406152") is True


def test_isbn10_with_x():
    assert isbn10_valid("0-8044-2957-X") is True


def test_isbn10_another_x():
    assert isbn10_valid("3-16-148410-X") is True


def test_isbn10_lower_case_x():
    assert isbn10_valid("0-8044-2957-x") is False


def test_isbn10_bad_checksum():
    assert isbn10_valid("0-306-40615-3") is False


def test_isbn10_bad_checksum_with_x():
    assert isbn10_valid("0-306-40615-X") is False


def test_isbn10_x_not_last():
    assert isbn10_valid("X-306-40615-2") is False


def test_isbn10_wrong_length():
    assert isbn10_valid("0-306-40615") is False
    assert isbn10_valid("0-306-40615-22") is False


def test_isbn10_letter_inside():
    assert isbn10_valid("0-306-4A615-2") is False


def test_identifier():
    assert is_identifier("_name2") is True


def test_identifier_single_characters():
    assert is_identifier("x") is True
    assert is_identifier("_") is True


def test_identifier_digit_first():
    assert is_identifier("2name") is False


def test_identifier_empty():
    assert is_identifier("") is False


def test_identifier_bad_characters():
    assert is_identifier("a-b") is False
    assert is_identifier("a b") is False


def test_identifier_too_long():
    assert is_identifier("a" * 33) is False


def test_identifier_max_length():
    assert is_identifier("a" * 32) is True


def test_identifier_custom_max_length():
    assert is_identifier("abc", max_length=2) is False
    assert is_identifier("ab", max_length=2) is True


def test_email_valid():
    assert is_email("ann@example.org") is True


def test_email_dotted_local_and_domain():
    assert is_email("a.b@mail.example.co.uk") is True


def test_email_hyphen_inside_label():
    assert is_email("x@my-host.org") is True


def test_email_missing_at():
    assert is_email("annexample.org") is False


def test_email_two_ats():
    assert is_email("a@@b.org") is False
    assert is_email("a@b@c.org") is False


def test_email_empty_local():
    assert is_email("@example.org") is False


def test_email_domain_without_dot():
    assert is_email("a@b") is False


def test_email_empty_label():
    assert is_email("a@b..org") is False
    assert is_email("a@b.org.") is False


def test_email_label_starting_with_hyphen():
    assert is_email("a@-b.org") is False


def test_email_space():
    assert is_email("a b@c.org") is False
    assert is_email("ab@c.org ") is False
