"""Table references normalized before they are compared or used, without a JVM.

The oracles are independent spellings: a folder built with pathlib from the working directory,
and the backquoted SQL written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.tables.refs import require_distinct, table_ref


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "spelling", ["out/tgt", "out/tgt/", "./out/tgt", "out//tgt", "out/x/../tgt", "{cwd}/out/tgt/"]
)
def test_a_relative_or_untidy_path_resolves_to_one_absolute_folder(
    cwd: Path, spelling: str
) -> None:
    ref = table_ref(spelling.format(cwd=cwd))
    assert ref.is_path
    assert ref.name == str(cwd / "out" / "tgt")
    assert ref.sql == f"delta.`{cwd / 'out' / 'tgt'}`"
    assert ref.text == spelling.format(cwd=cwd)  # kept as written, for messages and facts rows


@pytest.mark.parametrize(
    ("spelling", "resolved"),
    [
        ("s3://bucket/lake/./bronze/", "s3://bucket/lake/bronze"),
        ("abfss://c@a.dfs.core.windows.net/t/", "abfss://c@a.dfs.core.windows.net/t"),
        ("dbfs:/mnt//lake/x/../bronze", "dbfs:/mnt/lake/bronze"),
        ("file:///tmp/lake/bronze/", "file:///tmp/lake/bronze"),
        ("s3://bucket", "s3://bucket"),
    ],
)
def test_a_uri_keeps_its_scheme_and_authority_and_has_its_path_normalized(
    spelling: str, resolved: str
) -> None:
    assert table_ref(spelling).name == resolved


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("tgt/", "./tgt"),
        ("out/tgt", "{cwd}/out/tgt/"),
        ("out/./tgt", "out/tmp/../tgt"),
        ("Ops.Facts", "ops.facts"),
        ("ops.facts", "`ops`.`facts`"),
        ("ops . facts", "ops.facts"),
    ],
)
def test_two_spellings_of_one_table_are_refused_as_target_and_facts(
    cwd: Path, first: str, second: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        require_distinct(target=first, facts_table=second.format(cwd=cwd))
    text = str(refused.value)
    assert "target and facts_table are the same table" in text
    assert repr(first) in text


@pytest.mark.parametrize(
    ("first", "second"),
    [("ops.facts", "ops.bronze"), ("tgt", "./tgt"), ("a.b.c", "a.b"), ("out/a", "out/b")],
)
def test_different_tables_pass_the_distinct_check(cwd: Path, first: str, second: str) -> None:
    require_distinct(target=first, facts_table=second, control_table=None)


@pytest.mark.parametrize(
    ("name", "parts", "sql"),
    [
        ("orders", ("orders",), "`orders`"),
        ("bronze.orders", ("bronze", "orders"), "`bronze`.`orders`"),
        ("main.ops.facts_2", ("main", "ops", "facts_2"), "`main`.`ops`.`facts_2`"),
        ("`my-cat`.ops.`t``x`", ("my-cat", "ops", "t`x"), "`my-cat`.`ops`.`t``x`"),
        ("`a.b`.c", ("a.b", "c"), "`a.b`.`c`"),
        ("ops.2024_orders", ("ops", "2024_orders"), "`ops`.`2024_orders`"),
        ("ops.`2024`", ("ops", "2024"), "`ops`.`2024`"),
        ("  ops.select  ", ("ops", "select"), "`ops`.`select`"),
    ],
)
def test_a_catalog_name_is_parsed_into_parts_and_quoted_in_sql(
    name: str, parts: tuple[str, ...], sql: str
) -> None:
    ref = table_ref(name)
    assert not ref.is_path
    assert ref.parts == parts
    assert ref.sql == sql
    assert ref.name == sql


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("default.t1 SET TBLPROPERTIES ('a' = 'b')", "'S' at position 11 is not allowed"),
        ("ops.t; DROP TABLE x", "';' at position 5 is not allowed"),
        ("my-db.orders", "'-' at position 2 is not allowed"),
        ("ops..orders", "a part is empty"),
        ("ops.", "it ends with a dot"),
        ("a.b.c.d", "it has 4 parts, at most 3"),
        ("`ops.orders", "a backquote is not closed"),
        ("``.orders", "a part is empty"),
        ("`a\x00b`", "control character"),
        ("ops.2024", "'2024' is a number; enclose it in backquotes"),
    ],
)
def test_an_invalid_catalog_name_is_a_config_error_naming_the_argument(
    name: str, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        table_ref(name, argument="target")
    text = str(refused.value)
    assert text.startswith(f"target={name!r} is not a valid table name")
    assert says in text
    assert "catalog.schema.table" in text


def test_a_long_invalid_name_is_quoted_shortened() -> None:
    with pytest.raises(ConfigError) as refused:
        table_ref("x" * 10_000 + " junk", argument="facts_table")
    assert len(str(refused.value)) < 600


def test_a_table_reached_through_a_symbolic_link_is_the_same_table(tmp_path: Path) -> None:
    (tmp_path / "lake" / "orders").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "lake", target_is_directory=True)
    with pytest.raises(ConfigError, match="are the same folder"):
        require_distinct(
            target=str(tmp_path / "lake/orders"), facts_table=f"{tmp_path}/alias/orders"
        )


def test_a_table_inside_another_tables_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"facts_table .* lies inside target"):
        require_distinct(target=str(tmp_path / "t"), facts_table=str(tmp_path / "t" / "_facts"))
