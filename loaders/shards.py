"""Reading WebDataset shards (a public module): the stages that ``loaders.make_dataset`` composes, for tools.

``avalign preprocess`` and ``avalign report`` read shards with these; a training job uses
:func:`loaders.make_dataset` / :func:`loaders.make_loader` instead. Implementation: ``loaders._shards``.
"""
from avcore import ShardError
from loaders._shards import (
    DEFAULT_MAX_MEMBER_BYTES,
    DEFAULT_PIPE_STALL_SECONDS,
    TAR_NAME_ENCODING,
    TarMember,
    expand_shard_urls,
    find_tar_header,
    group_by_key,
    member_name_text,
    name_pipe_failures,
    open_shard,
    refuse_member,
    safe_member_name,
    scan_tar,
    shard_samples,
    shuffle_shards,
    split_key,
    split_shards,
    tar_members,
)

__all__ = [
    "DEFAULT_MAX_MEMBER_BYTES",
    "DEFAULT_PIPE_STALL_SECONDS",
    "ShardError",
    "TAR_NAME_ENCODING",
    "TarMember",
    "expand_shard_urls",
    "find_tar_header",
    "group_by_key",
    "member_name_text",
    "name_pipe_failures",
    "open_shard",
    "refuse_member",
    "safe_member_name",
    "scan_tar",
    "shard_samples",
    "shuffle_shards",
    "split_key",
    "split_shards",
    "tar_members",
]
