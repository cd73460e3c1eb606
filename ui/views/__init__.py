"""The console's pages, one module each: `render(client)` draws the page."""
