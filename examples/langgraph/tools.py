"""The library's two tools, as LangChain tools: the catalog and reservations, simulated in-process."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import tool

CATALOG: dict[str, dict[str, Any]] = {
    "9780441172719": {"title": "Dune", "author": "Frank Herbert", "copies": 2, "due": None},
    "9781635575637": {"title": "Piranesi", "author": "Susanna Clarke", "copies": 1, "due": None},
    "9780441478125": {
        "title": "The Left Hand of Darkness",
        "author": "Ursula K. Le Guin",
        "copies": 0,
        "due": "14 June",
    },
}


@tool
def search_catalog(title: str) -> dict[str, Any]:
    """Find a book in the library's catalog by its title; says whether a copy is on the shelf."""
    for isbn, book in CATALOG.items():
        if book["title"].casefold() == title.strip().casefold():
            return {"isbn": isbn, **book, "available": book["copies"] > 0}
    return {"error": f"no book titled {title!r} in the catalog"}


@tool
def reserve_book(isbn: str, member_id: str) -> dict[str, Any]:
    """Reserve a copy of the book with this ISBN for a library member."""
    book = CATALOG.get(isbn)
    if book is None:
        return {"error": f"unknown ISBN {isbn}"}
    if book["copies"] == 0:
        return {"error": f"no copy of {book['title']} is on the shelf"}
    return {
        "reservation_id": f"RES-{isbn[-4:]}",
        "title": book["title"],
        "member_id": member_id,
        "pickup_by": "Friday",
    }


TOOLS = [search_catalog, reserve_book]
