"""Geometry helpers used by the plotting code."""

import math


class Point:
    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y

    def distance(self, other: "Point") -> float:
        return math.hypot(self.x - other.x, self.y - other.y)

    def __repr__(self) -> str:
        return f"Point({self.x}, {self.y})"


class Polygon:
    def __init__(self, points: list[Point]) -> None:
        if len(points) < 3:
            raise ValueError("a polygon needs at least 3 points")
        self.points = points

    def perimeter(self) -> float:
        total = 0.0
        for a, b in zip(self.points, self.points[1:] + self.points[:1]):
            total += a.distance(b)
        return total

    def area(self) -> float:
        # Shoelace formula.
        s = 0.0
        for a, b in zip(self.points, self.points[1:] + self.points[:1]):
            s += a.x * b.y - b.x * a.y
        return abs(s) / 2

    def centroid(self) -> Point:
        n = len(self.points)
        return Point(sum(p.x for p in self.points) / n, sum(p.y for p in self.points) / n)


def regular_polygon(n: int, radius: float = 1.0) -> Polygon:
    step = 2 * math.pi / n
    return Polygon([Point(radius * math.cos(i * step), radius * math.sin(i * step)) for i in range(n)])
