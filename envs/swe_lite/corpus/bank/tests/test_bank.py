import pytest

from bank import Account, InsufficientFunds, total_deposits


def test_deposit():
    account = Account("ann", 100)
    assert account.deposit(50) == 150


def test_deposit_rejects_zero():
    with pytest.raises(ValueError):
        Account("ann").deposit(0)


def test_withdraw():
    assert Account("ann", 100).withdraw(30) == 70


def test_withdraw_exact_balance():
    assert Account("ann", 100).withdraw(100) == 0


def test_withdraw_insufficient():
    with pytest.raises(InsufficientFunds):
        Account("ann", 10).withdraw(11)


def test_withdraw_within_overdraft():
    assert Account("ann", 10, overdraft=50).withdraw(60) == -50


def test_withdraw_rejects_negative():
    with pytest.raises(ValueError):
        Account("ann", 10).withdraw(-5)


def test_negative_overdraft_rejected():
    with pytest.raises(ValueError):
        Account("ann", overdraft=-1)


def test_transfer_moves_money():
    a, b = Account("ann", 100), Account("bob", 5)
    a.transfer(b, 40)
    assert (a.balance, b.balance) == (60, 45)


def test_transfer_failure_leaves_balances():
    a, b = Account("ann", 10), Account("bob", 0)
    with pytest.raises(InsufficientFunds):
        a.transfer(b, 20)
    assert (a.balance, b.balance) == (10, 0)


def test_transfer_to_self_rejected():
    a = Account("ann", 10)
    with pytest.raises(ValueError):
        a.transfer(a, 1)


def test_total_deposits():
    a = Account("ann")
    a.deposit(5)
    a.deposit(7)
    a.withdraw(3)
    assert total_deposits(a) == 12
