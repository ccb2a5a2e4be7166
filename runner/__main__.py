from runner import cli

cli.entry()
