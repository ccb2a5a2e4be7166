import flask
import requests
import yaml

app = flask.Flask(__name__)


@app.get("/items")
def items() -> list[dict[str, str]]:
    with open("items.yaml", encoding="utf-8") as handle:
        return yaml.load(handle, Loader=yaml.Loader)


@app.get("/proxy")
def proxy() -> str:
    return requests.get(flask.request.args["url"], timeout=5).text
