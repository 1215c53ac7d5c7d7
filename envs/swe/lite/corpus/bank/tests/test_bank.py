import pytest

from bank import Account, InsufficientFunds, total_deposits


def test_new_account_defaults():
    account = Account("ann")
    assert (account.owner, account.balance, account.overdraft, account.log) == ("ann", 0, 0, [])


def test_new_account_keeps_balance_and_overdraft():
    account = Account("bob", 250, overdraft=100)
    assert (account.balance, account.overdraft) == (250, 100)


def test_new_account_may_start_negative():
    account = Account("cy", -20, overdraft=50)
    assert (account.balance, account.available()) == (-20, 30)


def test_negative_overdraft_rejected():
    with pytest.raises(ValueError):
        Account("ann", overdraft=-1)


def test_large_negative_overdraft_rejected():
    with pytest.raises(ValueError):
        Account("ann", 1000, overdraft=-500)


def test_zero_overdraft_allowed():
    assert Account("ann", 5, overdraft=0).available() == 5


def test_deposit():
    account = Account("ann", 100)
    assert account.deposit(50) == 150


def test_deposit_one_cent():
    assert Account("ann", 7).deposit(1) == 8


def test_deposit_into_overdrawn_account():
    assert Account("ann", -40, overdraft=40).deposit(15) == -25


def test_deposits_add_up():
    account = Account("ann", 10)
    account.deposit(20)
    account.deposit(1)
    account.deposit(300)
    assert account.balance == 331


def test_deposit_is_logged():
    account = Account("ann", 100)
    account.deposit(50)
    account.deposit(2)
    assert account.log == [("deposit", 50), ("deposit", 2)]


def test_deposit_rejects_zero():
    with pytest.raises(ValueError):
        Account("ann", 3).deposit(0)


def test_deposit_rejects_negative():
    with pytest.raises(ValueError):
        Account("ann", 3).deposit(-10)


def test_rejected_deposit_changes_nothing():
    account = Account("ann", 3)
    with pytest.raises(ValueError):
        account.deposit(0)
    assert (account.balance, account.log) == (3, [])


def test_available_without_overdraft():
    assert Account("ann", 120).available() == 120


def test_available_includes_overdraft():
    assert Account("ann", 120, overdraft=80).available() == 200


def test_available_when_overdrawn():
    assert Account("ann", -70, overdraft=100).available() == 30


def test_withdraw():
    assert Account("ann", 100).withdraw(30) == 70


def test_withdraw_one_cent():
    assert Account("ann", 9).withdraw(1) == 8


def test_withdraw_exact_balance():
    assert Account("ann", 100).withdraw(100) == 0


def test_withdraw_one_more_than_balance():
    with pytest.raises(InsufficientFunds):
        Account("ann", 10).withdraw(11)


def test_withdraw_far_too_much():
    with pytest.raises(InsufficientFunds):
        Account("ann", 10, overdraft=5).withdraw(1000)


def test_withdraw_within_overdraft():
    assert Account("ann", 10, overdraft=50).withdraw(40) == -30


def test_withdraw_whole_overdraft():
    assert Account("ann", 10, overdraft=50).withdraw(60) == -50


def test_withdraw_past_overdraft():
    with pytest.raises(InsufficientFunds):
        Account("ann", 10, overdraft=50).withdraw(61)


def test_withdraw_rejects_zero():
    with pytest.raises(ValueError):
        Account("ann", 10).withdraw(0)


def test_withdraw_rejects_negative():
    with pytest.raises(ValueError):
        Account("ann", 10).withdraw(-5)


def test_rejected_withdraw_changes_nothing():
    account = Account("ann", 10)
    with pytest.raises(ValueError):
        account.withdraw(0)
    assert (account.balance, account.log) == (10, [])


def test_withdraw_is_logged():
    account = Account("ann", 100)
    account.withdraw(30)
    account.withdraw(5)
    assert (account.balance, account.log) == (65, [("withdraw", 30), ("withdraw", 5)])


def test_failed_withdraw_changes_nothing():
    account = Account("ann", 10)
    with pytest.raises(InsufficientFunds):
        account.withdraw(25)
    assert (account.balance, account.log) == (10, [])


def test_transfer_moves_money():
    a, b = Account("ann", 100), Account("bob", 5)
    a.transfer(b, 40)
    assert (a.balance, b.balance) == (60, 45)


def test_transfer_whole_balance():
    a, b = Account("ann", 25), Account("bob", 0)
    a.transfer(b, 25)
    assert (a.balance, b.balance) == (0, 25)


def test_transfer_uses_overdraft():
    a, b = Account("ann", 10, overdraft=30), Account("bob", 1)
    a.transfer(b, 35)
    assert (a.balance, b.balance) == (-25, 36)


def test_transfer_is_logged_on_both_accounts():
    a, b = Account("ann", 100), Account("bob", 5)
    a.transfer(b, 40)
    assert a.log == [("withdraw", 40), ("transfer", 40)]
    assert b.log == [("deposit", 40)]


def test_transfer_failure_leaves_balances_and_logs():
    a, b = Account("ann", 10), Account("bob", 3)
    with pytest.raises(InsufficientFunds):
        a.transfer(b, 11)
    assert (a.balance, b.balance) == (10, 3)
    assert (a.log, b.log) == ([], [])


def test_transfer_rejects_zero():
    a, b = Account("ann", 10), Account("bob", 3)
    with pytest.raises(ValueError):
        a.transfer(b, 0)
    assert (a.balance, b.balance) == (10, 3)


def test_transfer_to_self_rejected():
    a = Account("ann", 10)
    with pytest.raises(ValueError):
        a.transfer(a, 1)


def test_transfer_to_self_changes_nothing():
    a = Account("ann", 50, overdraft=10)
    with pytest.raises(ValueError):
        a.transfer(a, 20)
    assert (a.balance, a.log) == (50, [])


def test_total_deposits():
    a = Account("ann")
    a.deposit(5)
    a.deposit(7)
    a.withdraw(3)
    assert total_deposits(a) == 12


def test_total_deposits_of_new_account():
    assert total_deposits(Account("ann", 500)) == 0


def test_total_deposits_ignores_withdrawals():
    a = Account("ann", 100)
    a.withdraw(60)
    a.withdraw(1)
    assert total_deposits(a) == 0


def test_total_deposits_counts_incoming_transfers():
    a, b = Account("ann", 100), Account("bob", 0)
    a.transfer(b, 30)
    b.deposit(4)
    assert (total_deposits(a), total_deposits(b)) == (0, 34)
