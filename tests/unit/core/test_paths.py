"""The one path rule: a path resolved once, compared resolved (decision 1310)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mssql_cdc.core import paths
from mssql_cdc.core.paths import check_apart, check_checkpoint_place, check_sink_folders, place
from mssql_cdc.errors import ConfigError


@pytest.mark.parametrize("spelling", ["a/y/../x", "a//x/", "./a/x", "link/x", "a/./x/"])
def test_every_spelling_of_one_folder_resolves_to_one_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    (tmp_path / "a" / "y").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    plain = place(str(tmp_path.resolve() / "a" / "x"), what="target")
    spelled = place(spelling, what="checkpoint")
    assert spelled.same(plain)
    assert spelled.key == plain.key


def test_two_places_that_are_one_folder_are_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="are the same folder") as refused:
        check_apart(
            [
                place(str(tmp_path / "x"), what="target"),
                place(f"{tmp_path}/y/../x/", what="checkpoint"),
            ]
        )
    message = str(refused.value)
    assert f"target '{tmp_path}/x'" in message
    assert f"checkpoint '{tmp_path}/y/../x/' (resolves to {tmp_path.resolve()}/x)" in message
    assert "give each its own folder" in message


def test_a_place_inside_another_is_refused_either_way_round(tmp_path: Path) -> None:
    outer, inner = (
        place(str(tmp_path / "t"), what="target"),
        place(str(tmp_path / "t" / "c"), what="checkpoint"),
    )
    for order in ([outer, inner], [inner, outer]):
        with pytest.raises(ConfigError, match=r"checkpoint .* lies inside target"):
            check_apart(order)


def test_siblings_with_a_common_prefix_are_apart(tmp_path: Path) -> None:
    check_apart(
        [place(str(tmp_path / "orders"), what="a"), place(str(tmp_path / "orders2"), what="b")]
    )


def test_case_is_ignored_where_the_file_system_ignores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "_ignores_case", lambda _path: True)
    with pytest.raises(ConfigError, match="lies inside"):
        check_apart(
            [place(str(tmp_path / "Bronze"), what="a"), place(str(tmp_path / "bronze/c"), what="b")]
        )


def test_case_matters_where_the_file_system_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "bronze").mkdir()
    assert not place(str(tmp_path / "bronze"), what="a").folded
    check_apart(
        [place(str(tmp_path / "Bronze"), what="a"), place(str(tmp_path / "bronze/c"), what="b")]
    )


def test_uris_are_compared_as_normalized_text_and_a_file_uri_as_its_path(tmp_path: Path) -> None:
    assert place("S3://bucket/a//b/../c/", what="x").key == "s3://bucket/a/c"
    assert place(f"file:{tmp_path}/t", what="x").same(place(str(tmp_path / "t"), what="y"))
    assert not place("s3://bucket/t", what="x").same(place("/t", what="y"))


def test_a_checkpoint_of_its_own_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "ck" / "offsets").mkdir(parents=True)
    check_checkpoint_place(place(str(tmp_path / "ck"), what="checkpoint"))


def test_a_checkpoint_in_a_spark_checkpoints_generations_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ck" / "commits").mkdir(parents=True)
    inner = os.path.join(tmp_path, "ck", "_generations", "1")
    with pytest.raises(ConfigError, match="another stream's checkpoint") as refused:
        check_checkpoint_place(place(inner, what="checkpoint"))
    assert str(tmp_path.resolve() / "ck") in str(refused.value)


def test_a_metrics_folder_may_hold_tables_outside_the_sinks_folder(tmp_path: Path) -> None:
    metrics = place(str(tmp_path), what="metricsPath")
    check_sink_folders(
        metrics,
        "orders",
        tables=[place(str(tmp_path / "bronze" / "orders"), what="target")],
        checkpoint=place(str(tmp_path / "checkpoints" / "orders"), what="checkpoint"),
    )


def test_a_table_in_a_generations_metrics_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"orders\.g2, the metrics folder of app_id"):
        check_sink_folders(
            place(str(tmp_path), what="metricsPath"),
            "orders",
            tables=[place(str(tmp_path / "orders.g2" / "t"), what="target")],
            checkpoint=place(str(tmp_path / "ck"), what="checkpoint"),
        )
