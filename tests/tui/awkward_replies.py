"""Replies a small model really writes, that a Markdown view may fail to show (issue 39.1): odd lists, stray markup,
control characters, unclosed code fences, half a table, ... Each must reach the screen in full."""

AWKWARD_REPLIES = [
    # The two the issue saw shown as an empty block.
    "1. 1. 1. 2. 3. 4. 5. 6. 7. 8. 9. 10.\n\nThe numbers are in descending order.",
    "1. 1. 1. 2. 3. ... 10.\n\nThe numbers are in descending order.",
    # Lists whose items are empty, or only a number.
    "1.\n2.\n3.\n\nThose are the steps.",
    "1.\n1.\n1.\n2.\n3.\n...\n10.\n\nCounting done.",
    "Animals:\n1. 1. 1. 2.\n",
    "- \n- \n- cat\n\nThree animals.",
    "* * * dog",
    "10.\n9.\n8.\n\nDescending.",
    "1. Dog\n   1.\n      1.\n\nNested and empty.",
    "- - - - - - - - - - - - deep\n\nafter the deep list",
    "> > > > > > > > > > > > quoted deeply\n\nend of quote",
    # Stray markup: HTML the view drops, unbalanced emphasis, link syntax, a heading alone.
    "Use <T> for the type and <br> between lines.",
    "<div>inside a div</div>\n\nand after it",
    "<!-- a hidden comment -->visible words",
    "**bold that never closes and *half italic",
    "[link text](https://example.com/path) and [broken link(",
    "#\n##\n### Only hashes above",
    "Setext heading\n===\n\n---\n\nafter a rule",
    # Control characters and escapes (the app shows them escaped, never runs them).
    "red \x1b[31mALERT\x1b[0m text",
    "bell\x07 and backspace\x08 and carriage\rreturn",
    "tab\tseparated\tvalues",
    # Code fences that never close, or close oddly.
    "```python\nprint('never closed')\nx = 1",
    "Here is code:\n```\nfirst\n```\n```\nsecond never closed",
    "~~~\ntilde fence\n~~~~~~",
    "    indented code\n    more code\n\ntext after code",
    "`inline code that never closes",
    # Tables cut short or malformed.
    "| name | age |\n|---|",
    "| name | age |\n|---|---|\n| Ann | 3",
    "| a |\n| b |\n| c |",
    "|---|---|\n| lonely | row |",
    # Mixed and odd layouts.
    "Term\n: definition after a colon",
    "Line one  \nLine two with a hard break\\\nLine three",
    "1) paren list\n2) second\n\nafter parens",
    "+ plus item\n+ another plus\n\ndone",
    "\\*not emphasis\\* and \\# not a heading",
    "A footnote[^1].\n\n[^1]: The footnote text.",
    "![an image](missing.png) with alt text",
    "Emoji :smile: and unicode ✓ ünïcödé",
]
