def main(argv: list[str] | None = None) -> int:\n    return 0
