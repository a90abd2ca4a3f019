// Generated from instances.json by `intentref conformance --write-mjs`; do not edit.
// The configuration `intent-runtime-mcp --config instances.mjs` loads.
export default {
  "instances": {
    "default": {
      "language": "zh-CN"
    },
    "order": {
      "language": "zh-CN",
      "schema": {
        "type": "object",
        "properties": {
          "orderId": {
            "type": "string",
            "description": "当前请求中的订单编号，保留前导零。"
          }
        },
        "required": [
          "orderId"
        ],
        "additionalProperties": false
      }
    },
    "multi": {
      "language": "zh-CN",
      "schema": {
        "type": "object",
        "properties": {
          "urgent": {
            "type": "boolean",
            "description": "请求明确给出的加急标志。"
          },
          "budget": {
            "type": "number",
            "minimum": 0
          },
          "note": {
            "type": [
              "string",
              "null"
            ]
          },
          "tags": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "metadata": {
            "type": "object"
          },
          "orders": {
            "type": "array",
            "minItems": 1,
            "items": {
              "type": "object",
              "properties": {
                "orderId": {
                  "type": "string",
                  "pattern": "^\\d{6}$"
                },
                "quantity": {
                  "type": "integer",
                  "minimum": 1
                }
              },
              "required": [
                "orderId",
                "quantity"
              ],
              "additionalProperties": false
            }
          },
          "deliveryNote": {
            "type": "string",
            "description": "请求明确给出的配送说明；未提供时省略。"
          }
        },
        "required": [
          "orders"
        ],
        "additionalProperties": false
      }
    },
    "english": {
      "language": "en",
      "schema": {
        "type": "object",
        "properties": {
          "city": {
            "type": "string"
          },
          "nights": {
            "type": "integer",
            "minimum": 1
          }
        },
        "additionalProperties": false
      }
    },
    "norepair": {
      "language": "zh-CN",
      "schema": {
        "type": "object",
        "properties": {
          "orderId": {
            "type": "string",
            "description": "当前请求中的订单编号，保留前导零。"
          }
        },
        "required": [
          "orderId"
        ],
        "additionalProperties": false
      },
      "repairAttempts": 0
    },
    "tworepairs": {
      "language": "zh-CN",
      "schema": {
        "type": "object",
        "properties": {
          "orderId": {
            "type": "string",
            "description": "当前请求中的订单编号，保留前导零。"
          }
        },
        "required": [
          "orderId"
        ],
        "additionalProperties": false
      },
      "repairAttempts": 2
    },
    "escaped": {
      "language": "en",
      "schema": {
        "type": "object",
        "properties": {
          "a/b": {
            "type": "string"
          },
          "m~n": {
            "type": "string"
          },
          "": {
            "type": "string"
          }
        },
        "additionalProperties": false
      }
    },
    "period": {
      "language": "zh-CN",
      "schema": {
        "type": "object",
        "description": "结束时间不得早于开始时间。",
        "properties": {
          "startTime": {
            "type": "string",
            "format": "time"
          },
          "endTime": {
            "type": "string",
            "format": "time"
          }
        },
        "required": [
          "startTime",
          "endTime"
        ],
        "additionalProperties": false
      }
    }
  }
};
