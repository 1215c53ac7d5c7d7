"""A bank account with integer cents, an overdraft limit and a transaction log."""


class InsufficientFunds(Exception):
    """A withdrawal or transfer would exceed the overdraft limit."""


class Account:
    """Balance in cents; `overdraft` is how far below zero the balance may go."""

    def __init__(self, owner, balance=0, overdraft=0):
        if overdraft < 0:
            raise ValueError("overdraft must be non-negative")
        self.owner = owner
        self.balance = balance
        self.overdraft = overdraft
        self.log = []

    def deposit(self, amount):
        """Add a positive amount; returns the new balance."""
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.log.append(("deposit", amount))
        return self.balance

    def available(self):
        """Money that can still be withdrawn, overdraft included."""
        return self.balance + self.overdraft

    def withdraw(self, amount):
        """Remove a positive amount if the overdraft allows it; returns the new balance."""
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.available():
            raise InsufficientFunds(f"{self.owner} cannot withdraw {amount}")
        self.balance -= amount
        self.log.append(("withdraw", amount))
        return self.balance

    def transfer(self, other, amount):
        """Move `amount` to another account atomically."""
        if other is self:
            raise ValueError("cannot transfer to the same account")
        self.withdraw(amount)
        other.deposit(amount)
        self.log.append(("transfer", amount))


def total_deposits(account):
    """Sum of all deposits in the log."""
    total = 0
    for kind, amount in account.log:
        if kind == "deposit":
            total += amount
    return total
