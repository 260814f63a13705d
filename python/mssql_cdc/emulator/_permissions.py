"""Database users and role membership of the emulator (docs/emulator.md).

SQL Server lets db_owner read every capture instance and anyone else only the instances whose
gating role (`enable_cdc(..., role_name=...)`) they are a member of. A reader acts as a user
with `Emulator.reader(user=...)`; over TDS the login name picks the user. Without users, or as
a login that is no user, everyone reads as dbo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Permissions"]


class Permissions:
    """The user and role calls of `Emulator`, which mixes this class in."""

    @property
    def _open_engine(self) -> Any:  # the Emulator's engine handle; raises once it is closed
        raise NotImplementedError

    def create_user(self, name: str, *, roles: Sequence[str] = ()) -> None:
        """CREATE USER `name`, a member of `roles` (db_owner, or roles enable_cdc named).

        Raises:
            SchemaError: the name is taken (15023) or empty.
            UnknownObjectError: a role does not exist (15151).
        """
        if isinstance(roles, str):
            raise TypeError("roles must be a list of role names, not one string")
        self._open_engine.create_user(name, list(roles))

    def add_role_member(self, role: str, user: str) -> None:
        """ALTER ROLE `role` ADD MEMBER `user`.

        Raises:
            UnknownObjectError: the role or the user does not exist (15151).
        """
        self._open_engine.add_role_member(role, user)
